// The helper's answer to a failed C++ allocation (CHelperProcess.h, chelper_exit_on_failed_new).
#include "CHelperProcess.h"

#include <new>
#include <unistd.h>

namespace {
int failedNewStatus = 1;

void exitOnFailedNew() { _exit(failedNewStatus); }
}  // namespace

extern "C" void chelper_exit_on_failed_new(int status) {
    failedNewStatus = status;
    std::set_new_handler(exitOnFailedNew);
}
