/*
 * ui_main: `unmask` with no subcommand: the interactive visualizer. Parses its options
 * (model or preset, settings, theme), opens the source (the engine, or the fake one with
 * --demo-ui), runs the worker thread and the curses event loop, and restores the terminal
 * on every way out. Returns the process exit status.
 */
#ifndef UM_UI_MAIN_H
#define UM_UI_MAIN_H

int ui_main(int argc, char **argv);

#endif
