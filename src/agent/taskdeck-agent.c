/*
 * taskdeck-agent: runs one run for taskdeckd, speaking the host protocol on
 * stdin and stdout (docs/host-protocol.md, docs/agent.md).
 */
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent.h"
#include "framework.h"
#include "host.h"
#include "log.h"
#include "loop.h"
#include "sandbox.h"

#define EXIT_PROTOCOL 3

int
main(int argc, char **argv)
{
	struct agent_config cfg;
	struct host *host;
	const cJSON *start;
	char *why = NULL;

	log_init("taskdeck-agent", stderr, getenv("TASKDECK_AGENT_DEBUG") ?
	    LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	if (argc > 1) {
		if (strcmp(argv[1], "--version") == 0) {
			printf("taskdeck-agent %s\n", TD_VERSION);
			return 0;
		}
		/* The permission prompt tool of an external CLI (framework-ask.c). */
		if (argc == 3 && strcmp(argv[1], "--permission-server") == 0)
			return fw_permission_server(argv[2]);
		fprintf(stderr, "usage: taskdeck-agent (started by taskdeckd; "
		    "see docs/host-protocol.md)\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	sandbox_cgroups_init();	/* what dead taskdeck processes left, before a command */
	/* No same-user process reads our memory (the API key) or environment. */
	prctl(PR_SET_DUMPABLE, 0);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_error("cannot initialise libcurl");
		return 1;
	}
	host = host_open(STDIN_FILENO, STDOUT_FILENO);
	start = host_wait_start(host);
	if (start == NULL) {
		host_close(host);
		curl_global_cleanup();
		return EXIT_PROTOCOL;
	}
	if (!agent_config_parse(&cfg, start, &why)) {
		log_error("protocol error from the service: bad start line: %s", why);
		free(why);
		host_close(host);
		curl_global_cleanup();
		return EXIT_PROTOCOL;
	}
	host_set_request_base(host, cfg.request_id_base);
	log_info("run %s: framework %s, provider %s, model %s, profile %s",
	    cfg.run_id ? cfg.run_id : "?", cfg.framework, cfg.provider_kind, cfg.model,
	    agent_profile_name(cfg.profile));
	if (framework_find(cfg.framework) != NULL)
		framework_run(framework_find(cfg.framework), &cfg, host);
	else
		loop_run(&cfg, host);
	agent_config_free(&cfg);
	if (host_protocol_error(host)) {
		host_close(host);
		curl_global_cleanup();
		return EXIT_PROTOCOL;
	}
	host_close(host);
	curl_global_cleanup();
	return 0;
}
