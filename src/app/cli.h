/*
 * cli: the subcommands, one source file each (cmd_NAME.c). Each gets argv with argv[0]
 * set to its own name, prints its own --help, and returns the process exit status
 * (0 ok, 1 failure with a one-line "unmask NAME: ..." message on stderr, 2 bad usage).
 */
#ifndef UM_CLI_H
#define UM_CLI_H

int cmd_info(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_split(int argc, char **argv);

#endif
