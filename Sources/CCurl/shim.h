// The libcurl header (Debian: libcurl4-openssl-dev, /usr/include/<triplet>/curl). Only includes:
// what Swift cannot import (the variadic curl_easy_setopt/curl_easy_getinfo) lives in CCurlShims.
#ifndef SPLICE_CCURL_SHIM_H
#define SPLICE_CCURL_SHIM_H
#include <curl/curl.h>
#endif
