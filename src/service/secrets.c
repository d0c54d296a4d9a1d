#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "log.h"
#include "secrets.h"
#include "xalloc.h"

struct secrets {
	char *path;
	pthread_mutex_t mu;
	unsigned char *key;	/* sodium_malloc'd once loaded, else NULL */
	int make_errno;		/* why the key could not be made the last time, or 0 */
};

int
secrets_make_errno(struct secrets *s)
{
	int e;

	pthread_mutex_lock(&s->mu);
	e = s->make_errno;
	pthread_mutex_unlock(&s->mu);
	return e;
}

struct secrets *
secrets_new(const char *key_path)
{
	struct secrets *s = xcalloc(1, sizeof *s);

	s->path = xstrdup(key_path);
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void
secrets_free(struct secrets *s)
{
	if (s == NULL)
		return;
	if (s->key != NULL)
		sodium_free(s->key);
	pthread_mutex_destroy(&s->mu);
	free(s->path);
	free(s);
}

static bool
read_all(int fd, unsigned char *out, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = read(fd, out + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += (size_t)n;
	}
	return true;
}

/* Reads the key, refusing a file that others can read; makes it when absent. */
static bool
key_load(struct secrets *s)
{
	unsigned char *key = sodium_malloc(crypto_secretbox_KEYBYTES);
	struct stat sb;
	char extra;
	int fd;

	if (key == NULL)
		return false;
	fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		/* Made on first use: write a temporary file, then link it into place. */
		char *tmp = xasprintf("%s.tmp.%ld", s->path, (long)getpid());
		bool ok;

		crypto_secretbox_keygen(key);
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		errno = 0;
		ok = fd >= 0 && fchmod(fd, 0600) == 0 &&
		    write(fd, key, crypto_secretbox_KEYBYTES) == crypto_secretbox_KEYBYTES &&
		    fsync(fd) == 0;
		s->make_errno = ok ? 0 : errno != 0 ? errno : EIO;
		if (fd >= 0)
			close(fd);
		/* link() fails if another writer got there first: then read theirs. */
		ok = ok && link(tmp, s->path) == 0;
		if (!ok && s->make_errno == 0)
			s->make_errno = errno;
		unlink(tmp);
		free(tmp);
		if (ok) {
			log_info("made a new secrets key %s", s->path);
			s->key = key;
			return true;
		}
		fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd < 0) {
		log_error("cannot open the secrets key %s: %s", s->path, strerror(errno));
		sodium_free(key);
		return false;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (sb.st_mode & 077) != 0 ||
	    sb.st_uid != geteuid()) {
		log_error("refusing the secrets key %s: it must be a regular file of ours "
		    "with mode 0600", s->path);
		close(fd);
		sodium_free(key);
		return false;
	}
	if (!read_all(fd, key, crypto_secretbox_KEYBYTES) || read(fd, &extra, 1) != 0) {
		log_error("the secrets key %s is not %d bytes long", s->path,
		    crypto_secretbox_KEYBYTES);
		close(fd);
		sodium_free(key);
		return false;
	}
	close(fd);
	s->key = key;
	return true;
}

static bool
key_ready(struct secrets *s)
{
	bool ok;

	pthread_mutex_lock(&s->mu);
	ok = s->key != NULL || key_load(s);
	pthread_mutex_unlock(&s->mu);
	return ok;
}

bool
secrets_seal(struct secrets *s, const char *plain, size_t len, unsigned char **sealed,
    size_t *sealed_len)
{
	unsigned char *out;

	*sealed = NULL;
	if (!key_ready(s))
		return false;
	*sealed_len = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + len;
	out = xmalloc(*sealed_len);
	randombytes_buf(out, crypto_secretbox_NONCEBYTES);
	crypto_secretbox_easy(out + crypto_secretbox_NONCEBYTES, (const unsigned char *)plain,
	    len, out, s->key);
	*sealed = out;
	return true;
}

bool
secrets_open(struct secrets *s, const unsigned char *sealed, size_t sealed_len,
    char **plain, size_t *plain_len)
{
	const size_t over = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES;
	char *out;

	*plain = NULL;
	if (sealed == NULL || sealed_len < over || !key_ready(s))
		return false;
	*plain_len = sealed_len - over;
	out = sodium_malloc(*plain_len + 1);
	if (out == NULL)
		return false;
	if (crypto_secretbox_open_easy((unsigned char *)out,
	    sealed + crypto_secretbox_NONCEBYTES, sealed_len - crypto_secretbox_NONCEBYTES,
	    sealed, s->key) != 0) {
		sodium_free(out);
		log_error("a stored secret does not authenticate under secret.key");
		return false;
	}
	out[*plain_len] = '\0';
	*plain = out;
	return true;
}

void
secrets_plain_free(char *plain)
{
	if (plain != NULL)
		sodium_free(plain);
}
