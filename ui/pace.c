/*
 * pace: the playback clock (see pace.h).
 */
#include "pace.h"

#include <math.h>
#include <stdio.h>

#define SLACK_MS 1e-6       /* absorbs rounding in now - shown_at: a step due at 100 ms is due at 99.9999999 */

void ui_pace_init(ui_pace *p, int32_t ms, double now) {
    p->ms = ms < 0 ? 0 : ms > UI_PACE_MAX_MS ? UI_PACE_MAX_MS : ms;
    p->shown_at = now;
}

void ui_pace_mark(ui_pace *p, double now) { p->shown_at = now; }

int32_t ui_pace_advance(ui_pace *p, int32_t shown, int32_t newest, double now) {
    if (shown >= newest) return shown;
    if (p->ms == 0) {
        p->shown_at = now;
        return newest;
    }
    if ((now - p->shown_at) * 1000.0 + SLACK_MS < (double)p->ms) return shown;
    p->shown_at = now;          /* from now, not from the due time: never two steps in a burst */
    return shown + 1;
}

int ui_pace_wait_ms(const ui_pace *p, int32_t shown, int32_t newest, double now) {
    if (shown >= newest) return -1;
    double left = (double)p->ms - (now - p->shown_at) * 1000.0 - SLACK_MS;
    return left <= 0 ? 0 : (int)ceil(left);
}

int32_t ui_pace_horizon(const ui_pace *p, int32_t shown) {
    return p->ms == 0 || shown > INT32_MAX - UI_PACE_LEAD ? INT32_MAX : shown + UI_PACE_LEAD;
}

int32_t ui_pace_halve(int32_t ms) { return ms / 2 < UI_PACE_MIN_MS ? 0 : ms / 2; }

int32_t ui_pace_double(int32_t ms) {
    if (ms <= 0) return UI_PACE_MIN_MS;
    return ms > UI_PACE_MAX_MS / 2 ? UI_PACE_MAX_MS : ms * 2;
}

void ui_pace_label(int32_t ms, char *buf, size_t cap) {
    if (ms <= 0) snprintf(buf, cap, "pace off");
    else snprintf(buf, cap, "pace %d ms", (int)ms);
}
