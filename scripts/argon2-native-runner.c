/* One side of scripts/argon2-bench (--native-src): libargon2 built from its own sources
 * with -march=native, in a whole process with the same protocol as kdf_runner: one hash,
 * then COUNT more, one JSON line with per-call wall and thread-CPU milliseconds and the
 * minor page faults of the first call and per later call.
 *
 *     argon2-native-runner M T P COUNT
 *
 * Only the library's public API (argon2.h) is used; the library itself is not in this
 * repository (the script compiles this file against a copy fetched by hand). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include "argon2.h"

static double now_ms(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long minflt(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s M T P COUNT\n", argv[0]);
        return 2;
    }
    unsigned m = (unsigned)atoi(argv[1]), t = (unsigned)atoi(argv[2]),
             p = (unsigned)atoi(argv[3]);
    int count = atoi(argv[4]);
    const char *pw = "benchmark password", *salt = "0123456789abcdef";
    unsigned char want[32], out[32];
    long f0 = minflt();
    double s = now_ms(CLOCK_MONOTONIC);
    if (argon2id_hash_raw(t, m, p, pw, strlen(pw), salt, strlen(salt), want, 32) != ARGON2_OK)
        return 1;
    double first = now_ms(CLOCK_MONOTONIC) - s;
    long f1 = minflt();
    printf("{\"ms\": [");
    double *cpu = malloc(sizeof(double) * (count > 0 ? count : 1));
    for (int i = 0; i < count; i++) {
        double w = now_ms(CLOCK_MONOTONIC), c = now_ms(CLOCK_THREAD_CPUTIME_ID);
        if (argon2id_hash_raw(t, m, p, pw, strlen(pw), salt, strlen(salt), out, 32) != ARGON2_OK
            || memcmp(out, want, 32) != 0)
            return 1;
        cpu[i] = now_ms(CLOCK_THREAD_CPUTIME_ID) - c;
        printf("%s%f", i ? ", " : "", now_ms(CLOCK_MONOTONIC) - w);
    }
    long f2 = minflt();
    printf("], \"cpu_ms\": [");
    for (int i = 0; i < count; i++)
        printf("%s%f", i ? ", " : "", cpu[i]);
    printf("], \"first_ms\": %f, \"minflt_first\": %ld, \"minflt_warm\": %f}\n", first, f1 - f0,
           count > 0 ? (double)(f2 - f1) / count : 0.0);
    free(cpu);
    return 0;
}
