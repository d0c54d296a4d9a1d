/*
 * STAND-IN for the readiness branch's runtimes.c (issue 16), so that this branch
 * builds and its tests run before that is merged: same API (runtimes.h).  Delete
 * this file and its Makefile.am line when merging readiness.
 */
#ifndef TD_SERVICE_RUNTIMES_H
#define TD_SERVICE_RUNTIMES_H
struct service;
enum runtime_status { RUNTIME_READY, RUNTIME_MISSING, RUNTIME_BROKEN, RUNTIME_OUTDATED };
struct runtime_info { char framework[32]; enum runtime_status status; char version[64]; char source[16]; char path[4096]; char message[256]; };
const char *runtime_status_name(enum runtime_status s);
int runtimes_probe(const struct service *svc, const char *framework, struct runtime_info *out);
#endif
