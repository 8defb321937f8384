#!/bin/sh
# Every public header must compile on its own, as C and as C++.
cc=${1:-cc}
case $cc in *clang*) cxx=clang++ ;; *) cxx=g++ ;; esac
status=0
for h in include/xfdr/*.h; do
	echo "#include \"xfdr/$(basename "$h")\"" > /tmp/xfdr_hdr_$$.c
	$cc -std=gnu11 -Wall -Wextra -Werror -Iinclude -fsyntax-only /tmp/xfdr_hdr_$$.c || status=1
	$cxx -std=c++11 -Wall -Wextra -Werror -Iinclude -fsyntax-only -x c++ /tmp/xfdr_hdr_$$.c || status=1
done
rm -f /tmp/xfdr_hdr_$$.c
[ $status = 0 ] && echo "check_headers: every public header compiles alone as C and C++"
exit $status
