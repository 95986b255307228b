/*
 * keys: the key bindings as a data table (htop/tig style). The help overlay is generated
 * from the same table, so every binding is listed exactly once.
 */
#ifndef UM_UI_KEYS_H
#define UM_UI_KEYS_H

typedef enum ui_action {
    UI_ACT_NONE = 0,
    UI_ACT_PAUSE, UI_ACT_STEP, UI_ACT_BACK, UI_ACT_FORWARD, UI_ACT_FIRST, UI_ACT_LIVE,
    UI_ACT_PACE_HALVE, UI_ACT_PACE_DOUBLE,
    UI_ACT_SCHEDULE, UI_ACT_SCORING, UI_ACT_STEPS_UP, UI_ACT_STEPS_DOWN,
    UI_ACT_BLOCK_DOWN, UI_ACT_BLOCK_UP, UI_ACT_TEMP_DOWN, UI_ACT_TEMP_UP, UI_ACT_CACHE, UI_ACT_TOKEN_EDIT,
    UI_ACT_RESTART, UI_ACT_RESEED, UI_ACT_EDIT, UI_ACT_HEAT, UI_ACT_LAYOUT, UI_ACT_THEME, UI_ACT_RECORD,
    UI_ACT_INSPECTOR, UI_ACT_SCHED_PANEL,
    UI_ACT_LEFT, UI_ACT_RIGHT, UI_ACT_UP, UI_ACT_DOWN, UI_ACT_UNFOCUS, UI_ACT_FOCUS,
    UI_ACT_HELP, UI_ACT_QUIT,
} ui_action;

typedef struct ui_key {
    int         codes[4];      /* getch() codes (ASCII or curses KEY_*), 0-terminated */
    const char *label;         /* as shown in the help */
    ui_action   action;
    const char *help;
} ui_key;

extern const ui_key ui_keys[];
extern const int    ui_keys_len;

ui_action ui_key_action(int code);

#endif
