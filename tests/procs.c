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

int
procs_count_cmdline_with(const char *needle)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], cmd[131072];
		ssize_t len, got;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		for (len = 0; len + 1 < (ssize_t)sizeof cmd &&
		    (got = read(fd, cmd + len, sizeof cmd - 1 - (size_t)len)) > 0; len += got)
			;
		close(fd);
		/* the arguments are NUL-separated: one string to search */
		for (ssize_t i = 0; i < len; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[len > 0 ? len : 0] = '\0';
		if (strstr(cmd, needle) != NULL)
			n++;
	}
	closedir(d);
	return n;
}
