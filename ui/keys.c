/*
 * keys: the binding table. Codes are plain ints: ASCII or the curses KEY_* constants
 * (only the constants are used here, no curses calls).
 */
#include <curses.h>

#include "keys.h"

const ui_key ui_keys[] = {
    { { ' ' },                     "space",        UI_ACT_PAUSE,      "pause / resume (after a scrub: from the newest step)" },
    { { 'n' },                     "n",            UI_ACT_STEP,       "one step while paused" },
    { { '[', KEY_SLEFT },          "[  S-Left",    UI_ACT_BACK,       "scrub back one recorded step (pauses)" },
    { { ']', KEY_SRIGHT },         "]  S-Right",   UI_ACT_FORWARD,    "scrub forward; at the newest step: one step" },
    { { KEY_HOME, '{' },           "Home {",       UI_ACT_FIRST,      "jump to step 0" },
    { { KEY_END, '}' },            "End  }",       UI_ACT_LIVE,       "jump to the newest step" },
    { { '<' },                     "<  >",         UI_ACT_PACE_HALVE, "halve / double the pace (ms per step while following)" },
    { { '>' },                     NULL,           UI_ACT_PACE_DOUBLE, NULL },
    { { 's' },                     "s",            UI_ACT_SCHEDULE,   "cycle schedule (block, timestep, threshold, linear, factor, eb)" },
    { { 'a' },                     "a",            UI_ACT_SCORING,    "cycle position scoring" },
    { { '+', '=' },                "+  -",         UI_ACT_STEPS_UP,   "double / halve the steps" },
    { { '-' },                     NULL,           UI_ACT_STEPS_DOWN, NULL },
    { { 'b' },                     "b  B",         UI_ACT_BLOCK_DOWN, "halve / double the block length" },
    { { 'B' },                     NULL,           UI_ACT_BLOCK_UP,   NULL },
    { { 't' },                     "t  T",         UI_ACT_TEMP_DOWN,  "temperature -0.1 / +0.1" },
    { { 'T' },                     NULL,           UI_ACT_TEMP_UP,    NULL },
    { { 'k' },                     "k",            UI_ACT_CACHE,      "cycle the K/V cache: none, prefix, dual" },
    { { 'x' },                     "x",            UI_ACT_TOKEN_EDIT, "token editing (LLaDA 2.1) on / off" },
    { { 'r' },                     "r  R",         UI_ACT_RESTART,    "restart with the same seed / a new seed" },
    { { 'R' },                     NULL,           UI_ACT_RESEED,     NULL },
    { { 'e' },                     "e",            UI_ACT_EDIT,       "edit the prompt, Enter restarts, Esc cancels" },
    { { 'h' },                     "h",            UI_ACT_HEAT,       "cycle heat: commit, live, order, entropy, K/V cache" },
    { { 'l' },                     "l",            UI_ACT_LAYOUT,     "switch layout: text / 9x9 sudoku grid" },
    { { 'c' },                     "c",            UI_ACT_THEME,      "cycle colour theme" },
    { { 'g' },                     "g",            UI_ACT_RECORD,     "start / stop a GIF recording (unmask-DATE-TIME.gif)" },
    { { 'i' },                     "i  p",         UI_ACT_INSPECTOR,  "hide / show the inspector / the schedule panel (room for the canvas)" },
    { { 'p' },                     NULL,           UI_ACT_SCHED_PANEL, NULL },
    { { KEY_LEFT },                "arrows click", UI_ACT_LEFT,       "move the inspector cursor" },
    { { KEY_RIGHT },               NULL,           UI_ACT_RIGHT,      NULL },
    { { KEY_UP },                  NULL,           UI_ACT_UP,         NULL },
    { { KEY_DOWN },                NULL,           UI_ACT_DOWN,       NULL },
    { { '\t' },                     "Tab",          UI_ACT_FOCUS,      "--compare: move the focus (inspector, settings keys) to the next pane" },
    { { 27 },                      "Esc",          UI_ACT_UNFOCUS,    "cursor follows the action again / close help" },
    { { '?' },                     "?",            UI_ACT_HELP,       "show / hide this help (space: its next page)" },
    { { 'q', 'Q' },                "q",            UI_ACT_QUIT,       "quit" },
};
const int ui_keys_len = (int)(sizeof ui_keys / sizeof ui_keys[0]);

ui_action ui_key_action(int code) {
    for (int i = 0; i < ui_keys_len; i++)
        for (int k = 0; k < 4 && ui_keys[i].codes[k]; k++)
            if (ui_keys[i].codes[k] == code) return ui_keys[i].action;
    return UI_ACT_NONE;
}
