#ifndef KLAXON_CCURL_SHIM_H
#define KLAXON_CCURL_SHIM_H

#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic macros Swift cannot call: typed wrappers.
static inline CURLcode klaxon_curl_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode klaxon_curl_setopt_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode klaxon_curl_setopt_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode klaxon_curl_setopt_slist(CURL *curl, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(curl, option, value);
}
typedef size_t (*klaxon_curl_io_callback)(char *buffer, size_t size, size_t nitems, void *userdata);
static inline CURLcode klaxon_curl_setopt_callback(CURL *curl, CURLoption option, klaxon_curl_io_callback value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode klaxon_curl_getinfo_long(CURL *curl, CURLINFO info, long *value) {
    return curl_easy_getinfo(curl, info, value);
}

#endif
