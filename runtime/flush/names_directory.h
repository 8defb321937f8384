/*
 * runtime/flush/names_directory.h - the "XFDRNAMS" names directory (layout: xfdr/format.h):
 * where `xfdr core` finds, in a core dump, the thread slots (tids, trace thread ids, names) and
 * each space of function ids' id -> address table, so that a trace rebuilt from a core names
 * its threads and functions as a flush's .map would have.
 */
#ifndef XFDR_RUNTIME_FLUSH_NAMES_DIRECTORY_H
#define XFDR_RUNTIME_FLUSH_NAMES_DIRECTORY_H

/*
 * names_directory_publish - (re)write the directory from the thread table, the registered
 * function sources (map_functions.h) that keep a table, and the -finstrument-functions id map,
 * and give its address to the pool locator. Context: init, after the thread table is set up,
 * and each registration of a source (both serialised by the lifecycle).
 */
void names_directory_publish(void);

#endif /* XFDR_RUNTIME_FLUSH_NAMES_DIRECTORY_H */
