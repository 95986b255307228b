/* cmd_info: placeholder until the GGUF reader lands. */
#include <stdio.h>
#include "cli.h"
int cmd_info(int argc, char **argv) { fprintf(stderr, "unmask info: not yet implemented\n"); return 1; }
