/*
 * runtime/control/wiped_pages.h - the pages fork children get zeroed (wiped_pages.c).
 */
#ifndef XFDR_RUNTIME_CONTROL_WIPED_PAGES_H
#define XFDR_RUNTIME_CONTROL_WIPED_PAGES_H

/*
 * wiped_pages_arm - ask the kernel to zero rt_state's page and the symbol layer's fork page in
 * fork children (MADV_WIPEONFORK; a child's mapping keeps the advice). Returns 1 when both
 * took, 0 when the kernel cannot (before Linux 4.14, pages other than 4 KiB).
 * Context: init.
 */
int wiped_pages_arm(void);

#endif /* XFDR_RUNTIME_CONTROL_WIPED_PAGES_H */
