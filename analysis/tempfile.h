/*
 * analysis/tempfile.h - scratch space on disk for work whose memory must stay flat: the stack
 * tree's sorted runs, the parts of an output written ahead of their turn.
 */
#ifndef XFDR_ANALYSIS_TEMPFILE_H
#define XFDR_ANALYSIS_TEMPFILE_H

/*
 * temp_file_open - a new, already unlinked file in $TMPDIR (else /tmp), named after what (e.g.
 * "stack") while it has a name: nothing is left behind, however the process ends.
 * Returns the descriptor (close-on-exec), or -1 with errno set.
 */
int temp_file_open(const char *what);

#endif /* XFDR_ANALYSIS_TEMPFILE_H */
