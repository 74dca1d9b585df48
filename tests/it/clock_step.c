/* Steps a process's wall clock, as NTP or a resumed VM does: loaded with LD_PRELOAD, it adds
 * the whole seconds written in the file $CLOCK_STEP_FILE (read at every call, so a test steps
 * a running process by rewriting it) to CLOCK_REALTIME. The monotonic and boot clocks are
 * left alone: they never step. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long step_seconds(void) {
    const char *path = getenv("CLOCK_STEP_FILE");
    if (path == NULL) return 0;
    FILE *file = fopen(path, "r");
    if (file == NULL) return 0;
    long long seconds = 0;
    if (fscanf(file, "%lld", &seconds) != 1) seconds = 0;
    fclose(file);
    return seconds;
}

int clock_gettime(clockid_t clock, struct timespec *now) {
    static int (*real)(clockid_t, struct timespec *) = NULL;
    if (real == NULL) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int result = real(clock, now);
    if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
        now->tv_sec += step_seconds();
    }
    return result;
}
