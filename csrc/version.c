/* version.c - build facts; SLG_VERSION comes from summarylog/_version.py via
 * the cffi build script, so C and Python report one version. */
#include "summarylog_api.h"

#ifndef SLG_VERSION
#error "SLG_VERSION must be defined by the build"
#endif

const char *slg_version(void) { return SLG_VERSION; }
