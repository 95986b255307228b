/*
 * ctl_record: the visualizer's recordings. rec_cli (--gif/--cast, the whole session) and
 * rec_key (the g key, a GIF) are fed every composed frame (ctl_rec_feed, from redraw);
 * the recorder keeps only frames that look different. Both are finished (files renamed
 * into place) after the terminal is restored, on every way out of the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cast.h"
#include "ctl_state.h"

static recorder_opts rec_opts(ctl *a, int cols, int rows) {
    const char *term = getenv("TERM");
    snprintf(a->rec_title, sizeof a->rec_title, "unmask: %.100s", a->prompt);   /* may cut UTF-8: the cast writer shows U+FFFD */
    return (recorder_opts){
        .cols = cols, .rows = rows, .real_time = true, .hold_cs = RECORDER_HOLD_CS,
        .pad_rgb = RECORDER_BG_DEFAULT, .cast_color = a->depth > 256 ? CAST_COLOR_24BIT : CAST_COLOR_256,
        .term = term && *term ? term : NULL, .title = a->rec_title,
    };
}

int ctl_rec_cli_open(ctl *a, const char *gif, const char *cast, um_err *e) {
    if (!gif && !cast) return UM_OK;
    recorder_opts o = rec_opts(a, a->fr.w, a->fr.h);
    o.gif_path = gif;
    o.cast_path = cast;
    return recorder_open(&a->rec_cli, &o, e);
}

int ctl_rec_cli_close(ctl *a) {
    int rc = 0;
    if (a->rec_cli) {
        um_err re = { "" };
        if (recorder_close(a->rec_cli, recorder_elapsed(a->rec_cli), &re)) {
            fprintf(stderr, "unmask: recording: %s\n", re.msg);
            rc = 1;
        }
        a->rec_cli = NULL;
    }
    if (a->rec_cli_lost[0]) {                       /* the files asked for were not written */
        fprintf(stderr, "unmask: recording: %s\n", a->rec_cli_lost);
        rc = 1;
    }
    return rc;
}

/* g: start a GIF of the screen as it is now, in ./unmask-YYYYmmdd-HHMMSS[-N].gif. */
static void rec_key_start(ctl *a) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    struct stat st;
    snprintf(a->rec_key_path, sizeof a->rec_key_path, "unmask-%s.gif", stamp);
    for (int n = 2; stat(a->rec_key_path, &st) == 0 && n < 100; n++)
        snprintf(a->rec_key_path, sizeof a->rec_key_path, "unmask-%s-%d.gif", stamp, n);
    recorder_opts o = rec_opts(a, a->fr.w, a->fr.h);
    o.gif_path = a->rec_key_path;
    um_err e = { "" };
    if (recorder_open(&a->rec_key, &o, &e)) { a->rec_key = NULL; ctl_say(a, "recording: %s", e.msg); return; }
    ctl_say(a, "recording %s (g stops)", a->rec_key_path);
}

/* Finish the g recording; the message says how it went (shown when `show`). */
void ctl_rec_key_stop(ctl *a, bool show) {
    if (!a->rec_key) return;
    um_err e = { "" };
    int frames = recorder_gif_frames(a->rec_key);
    int rc = recorder_close(a->rec_key, recorder_elapsed(a->rec_key), &e);
    a->rec_key = NULL;
    if (rc) snprintf(a->message, sizeof a->message, "recording failed: %s", e.msg);
    else snprintf(a->message, sizeof a->message, "saved %s (%d frames)", a->rec_key_path, frames);
    if (show) a->message_until = um_now() + CTL_MESSAGE_SECONDS;
}

void ctl_rec_key_toggle(ctl *a) {
    if (a->rec_key) ctl_rec_key_stop(a, true);
    else rec_key_start(a);
}

/* Feed the composed frame a->fr to the running recorders; a failing one is dropped. */
void ctl_rec_feed(ctl *a) {
    if (!a->rec_cli && !a->rec_key) return;
    char label[32];
    bool mark = a->fr.step > 0 && a->fr.step != a->rec_step;
    snprintf(label, sizeof label, "step %d", a->fr.step);
    a->rec_step = a->fr.step;
    um_err e = { "" };
    if (a->rec_cli && recorder_frame(a->rec_cli, recorder_elapsed(a->rec_cli), &a->fr, mark ? label : NULL, &e)) {
        recorder_abort(a->rec_cli);
        a->rec_cli = NULL;
        ctl_say(a, "recording stopped: %s", e.msg);
        snprintf(a->rec_cli_lost, sizeof a->rec_cli_lost, "%s", e.msg);
    }
    if (a->rec_key && recorder_frame(a->rec_key, recorder_elapsed(a->rec_key), &a->fr, NULL, &e)) {
        recorder_abort(a->rec_key);
        a->rec_key = NULL;
        ctl_say(a, "recording stopped: %s", e.msg);
    }
}
