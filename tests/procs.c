/* Looking at the machine's processes from a test (/proc). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procs.h"

int
procs_count_command(const char *prog, const char *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t plen = strlen(prog);
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], cmd[256];
		ssize_t len;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		len = read(fd, cmd, sizeof cmd - 1);
		close(fd);
		if (len <= 0)
			continue;
		cmd[len] = '\0';
		/* cmdline is "prog\0arg\0" */
		if (strcmp(cmd, prog) == 0 && (size_t)len > plen + 1 &&
		    strcmp(cmd + plen + 1, arg) == 0)
			n++;
	}
	closedir(d);
	return n;
}
