/* Removing a connector: its definition, its tokens, its state (connector-remove.h). */
#include <cjson/cJSON.h>

#include "connector-oauth.h"
#include "connector-remove.h"
#include "connectors.h"

enum td_code
connector_remove(struct service *svc, const char *id, struct problem *p)
{
	cJSON *c = NULL;
	enum td_code rc = connector_delete(svc, id, &c, p);

	if (rc != TD_OK)
		return rc;
	if (c != NULL)
		connector_oauth_forget(svc, c);	/* and its tokens: nothing renews them */
	cJSON_Delete(c);
	connector_state_remove(svc, id);	/* its state goes with it */
	return TD_OK;
}
