/*
 * The checks the C test programs share (test_hurray.c, test_slices.c):
 * CHECK(cond, fmt, ...) counts a pass or prints the failure with the last
 * error; OK(call) checks that a call returns HURRAY_OK. Each program ends
 * with "N passed, N failed". Include after hurray.h and stdio.h.
 */
#ifndef HURRAY_TEST_CHECK_H
#define HURRAY_TEST_CHECK_H

static int passed = 0;
static int failed = 0;
static const char *context = "";

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (cond) {                                                   \
            passed++;                                                 \
        } else {                                                      \
            failed++;                                                 \
            fprintf(stderr, "FAIL %s:%d [%s] %s: ", __FILE__, __LINE__, \
                    context, #cond);                                  \
            fprintf(stderr, __VA_ARGS__);                             \
            fprintf(stderr, " (last error: %s)\n", last_error());     \
        }                                                             \
    } while (0)

static const char *last_error(void) {
    const char *m = hurray_last_error_message();
    return m ? m : "(none)";
}

static const char *last_kind(void) {
    const char *k = hurray_last_error_kind();
    return k ? k : "(none)";
}

#define OK(call) CHECK((call) == HURRAY_OK, "%s", #call)

#endif
