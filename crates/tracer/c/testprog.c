/* Test program for the oltptrace tests: a fixed amount of deterministic work (loops,
   calls, memcpy, a sort) whose instruction count is compared with cachegrind's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long table[4096];

static int cmp(const void* a, const void* b)
{
   unsigned long x = *(const unsigned long*)a, y = *(const unsigned long*)b;
   return x < y ? -1 : x > y;
}

int main(void)
{
   unsigned long x = 88172645463325252UL;
   for (int i = 0; i < 4096; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      table[i] = x;
   }
   qsort(table, 4096, sizeof table[0], cmp);
   static unsigned long copy[4096];
   memcpy(copy, table, sizeof table);
   unsigned long sum = 0;
   for (int i = 0; i < 4096; i += 3)
      sum += copy[i] >> 3;
   printf("%lu\n", sum);
   return 0;
}
