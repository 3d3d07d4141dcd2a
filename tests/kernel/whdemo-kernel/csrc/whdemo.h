/* Shared declarations between the op table (module.c) and the implementations. */
#ifndef WHDEMO_H
#define WHDEMO_H

#define WHDEMO_ADD 0
#define WHDEMO_SCALE 1
#define WHDEMO_SILU 2

#ifdef __cplusplus
extern "C" {
#endif
int whdemo_launch(int op, const float* a, const float* b, float s, float* out, long long n,
                  char* err, int errlen);
int whdemo_device_count(void);
#ifdef __cplusplus
}
#endif

#endif
