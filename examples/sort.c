/*
 * examples/sort.c - an ordinary program to record: fill an array, sort it, search it,
 * checksum it. Nothing in it knows about xfdr; the build decides how it is instrumented:
 *   gcc -finstrument-functions            -> build/examples/cyg_sort, run with LD_PRELOAD
 *   clang -fxray-instrument + libxfdr.a   -> build/examples/xray_sort
 * usage: sort [N]   (N elements, default 2000)
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned rng_state = 12345;

static unsigned next_random(void)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return rng_state >> 8;
}

static void fill(int *v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		v[i] = (int)(next_random() % 100000u);
}

static void swap(int *a, int *b)
{
	int t = *a;

	*a = *b;
	*b = t;
}

static int partition(int *v, int lo, int hi)
{
	int pivot = v[hi], i = lo, j;

	for (j = lo; j < hi; j++)
		if (v[j] < pivot)
			swap(&v[i++], &v[j]);
	swap(&v[i], &v[hi]);
	return i;
}

static void quicksort(int *v, int lo, int hi)
{
	int p;

	if (lo >= hi)
		return;
	p = partition(v, lo, hi);
	quicksort(v, lo, p - 1);
	quicksort(v, p + 1, hi);
}

static int search(const int *v, int n, int key)
{
	int lo = 0, hi = n - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (v[mid] == key)
			return mid;
		if (v[mid] < key)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static unsigned checksum(const int *v, int n)
{
	unsigned sum = 0;
	int i;

	for (i = 0; i < n; i++)
		sum = sum * 31u + (unsigned)v[i];
	return sum;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000, found = 0, i;
	int *v;

	if (n < 1 || n > 10000000) {
		fprintf(stderr, "usage: %s [N], 1 <= N <= 10000000\n", argv[0]);
		return 2;
	}
	v = malloc(sizeof(*v) * (size_t)n);
	if (!v)
		return 1;
	fill(v, n);
	quicksort(v, 0, n - 1);
	for (i = 0; i < 100; i++)
		found += search(v, n, (int)(next_random() % 100000u)) >= 0;
	printf("sorted %d numbers, %d of 100 lookups found, checksum %08x\n", n, found,
	       checksum(v, n));
	free(v);
	return 0;
}
