/* setjmp.h for wasm32-wasi without exception handling: setjmp returns 0 once, and a longjmp
 * (libaom's error exit) traps, so the host sees a failed call instead of a jump. */
#ifndef CONVSVC_SETJMP_H
#define CONVSVC_SETJMP_H
typedef int jmp_buf[1];
#define setjmp(env) ((void)(env), 0)
#define longjmp(env, val) ((void)(env), (void)(val), __builtin_trap())
#endif
