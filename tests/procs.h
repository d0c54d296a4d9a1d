/* Looking at the machine's processes from a test (/proc), shared by unit and integration tests. */
#ifndef TD_TESTS_PROCS_H
#define TD_TESTS_PROCS_H

/* How many live processes have the command line exactly "prog arg". */
int procs_count_command(const char *prog, const char *arg);
/* How many live processes have needle anywhere in their command line (arguments
 * joined by spaces); -1 when /proc cannot be read. */
int procs_count_cmdline_with(const char *needle);

#endif
