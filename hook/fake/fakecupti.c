/*
 * fakecupti.c: a stand-in for libcupti in CI (no GPU). It implements the two
 * calls the hook makes, cuptiSubscribe and cuptiEnableCallback, and enforces
 * what CUPTI enforces: one subscriber per process (a second gets
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, 39) and callbacks only for
 * enabled (domain, id) pairs. fake_api_call plays the driver: it runs the
 * subscriber's callback at API enter and exit of one driver call, if
 * enabled. Built by the hook package's tests, never shipped.
 */
#include <stdint.h>
#include <string.h>

#include "../lib/cupti_decls.h"

#define FAKE_MAX_CBID 1024

static mmk_CUpti_CallbackFunc subscriber;
static void *subscriber_data;
static unsigned char enabled[FAKE_MAX_CBID];

__attribute__((visibility("default"))) mmk_CUptiResult cuptiSubscribe(mmk_CUpti_SubscriberHandle *sub, mmk_CUpti_CallbackFunc cb, void *data)
{
	if (subscriber)
		return 39; /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
	if (!sub || !cb)
		return 1; /* CUPTI_ERROR_INVALID_PARAMETER */
	subscriber = cb;
	subscriber_data = data;
	*sub = (mmk_CUpti_SubscriberHandle)&subscriber;
	return MMK_CUPTI_SUCCESS;
}

__attribute__((visibility("default"))) mmk_CUptiResult cuptiEnableCallback(uint32_t enable, mmk_CUpti_SubscriberHandle sub, mmk_CUpti_CallbackDomain domain, mmk_CUpti_CallbackId cbid)
{
	if (sub != (mmk_CUpti_SubscriberHandle)&subscriber || domain != MMK_CUPTI_CB_DOMAIN_DRIVER_API || cbid >= FAKE_MAX_CBID)
		return 1;
	enabled[cbid] = enable ? 1 : 0;
	return MMK_CUPTI_SUCCESS;
}

/* fake_api_call runs the callbacks of one driver call with its parameters
 * and the kernel's symbol name; it returns how many callbacks ran. */
__attribute__((visibility("default"))) int fake_api_call(mmk_CUpti_CallbackId cbid, const void *params, const char *symbol)
{
	if (!subscriber || cbid >= FAKE_MAX_CBID || !enabled[cbid])
		return 0;
	static _Atomic uint32_t correlation;
	mmk_CUpti_CallbackData d;
	memset(&d, 0, sizeof d);
	d.functionName = "fake";
	d.functionParams = params;
	d.symbolName = symbol;
	d.correlationId = ++correlation;
	d.callbackSite = MMK_CUPTI_API_ENTER;
	subscriber(subscriber_data, MMK_CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
	d.callbackSite = MMK_CUPTI_API_EXIT;
	subscriber(subscriber_data, MMK_CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
	return 2;
}
