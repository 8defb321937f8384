/*
 * runtime/flush/sig_interpose.h - the program's sigaction() and signal() go through xfdr, so
 * that a crash handler the program installs after xfdr's does not replace it, and its _exit()
 * and _Exit(), so that its crash handler cannot end the process before the crash is flushed
 * (see sig_interpose.c); xfdr's own calls go to the real sigaction().
 */
#ifndef XFDR_RUNTIME_FLUSH_SIG_INTERPOSE_H
#define XFDR_RUNTIME_FLUSH_SIG_INTERPOSE_H

#include <signal.h>

/*
 * sig_real_action - sigaction() as it would be without xfdr: the next definition after ours
 * (a sanitizer's interceptor, or libc's), found when the library is loaded.
 * Context: any, signal handlers included.
 */
int sig_real_action(int sig, const struct sigaction *act, struct sigaction *old);

#endif /* XFDR_RUNTIME_FLUSH_SIG_INTERPOSE_H */
