// The once-only global initialisation declared in CCurlShims.h; the rest is `static inline`.
#include "CCurlShims.h"
#include <pthread.h>

static pthread_once_t splice_curl_once = PTHREAD_ONCE_INIT;
static CURLcode splice_curl_init_result = CURLE_FAILED_INIT;

static void splice_curl_init_once(void) {
    splice_curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

CURLcode splice_curl_global_init(void) {
    pthread_once(&splice_curl_once, splice_curl_init_once);
    return splice_curl_init_result;
}
