// CCurlShims: the libcurl calls Swift cannot make. curl_easy_setopt and curl_easy_getinfo are
// variadic (the option decides the argument's type), and Swift does not call C variadic functions:
// one wrapper per argument type, each passing exactly that type. Depends on CCurl only. Every
// symbol is prefixed `splice_` and carries a comment saying why it exists.
#ifndef SPLICE_CCURLSHIMS_H
#define SPLICE_CCURLSHIMS_H
#include <curl/curl.h>

/// Runs curl_global_init(CURL_GLOBAL_DEFAULT) once per process (it is not thread-safe before
/// 7.84 and must precede every other call); later calls return the first call's result.
CURLcode splice_curl_global_init(void);

/// curl_easy_setopt for options taking a `long` (CURLOPTTYPE_LONG: flags, timeouts, sizes).
static inline CURLcode splice_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for options taking a `curl_off_t` (CURLOPTTYPE_OFF_T: *_LARGE sizes).
static inline CURLcode splice_curl_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for options taking a C string (CURLOPTTYPE_STRINGPOINT); libcurl copies it.
static inline CURLcode splice_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for options taking a data pointer (CURLOPTTYPE_CBPOINT/OBJECTPOINT: the
/// callbacks' user data, the error buffer). libcurl keeps the pointer, not a copy.
static inline CURLcode splice_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for CURLOPT_HTTPHEADER (CURLOPTTYPE_SLISTPOINT). libcurl keeps the list,
/// which must outlive the transfer.
static inline CURLcode splice_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *list) {
    return curl_easy_setopt(handle, option, list);
}

/// curl_easy_setopt for CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION (same signature).
static inline CURLcode splice_curl_setopt_write_function(CURL *handle, CURLoption option,
                                                          curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/// curl_easy_setopt for CURLOPT_READFUNCTION (the request body).
static inline CURLcode splice_curl_setopt_read_function(CURL *handle, curl_read_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}

/// curl_easy_setopt for CURLOPT_SEEKFUNCTION (rewinding the request body to send it again).
static inline CURLcode splice_curl_setopt_seek_function(CURL *handle, curl_seek_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, callback);
}

/// curl_easy_setopt for CURLOPT_XFERINFOFUNCTION (called during the transfer: cancellation).
static inline CURLcode splice_curl_setopt_xferinfo_function(CURL *handle, curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

/// curl_easy_getinfo for values returned as `long` (CURLINFO_LONG: the response code).
static inline CURLcode splice_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
#endif
