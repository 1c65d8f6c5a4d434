#ifndef NOTIFY_ROUTE_CMALLOCTUNING_H
#define NOTIFY_ROUTE_CMALLOCTUNING_H

/* glibc's mallopt(M_MMAP_THRESHOLD), which Swift's Glibc module does not declare. A fixed
 * threshold also ends glibc's raising of it each time a mapped block is freed. Returns
 * mallopt's result (1 on success). */
int notify_route_fix_mmap_threshold(int bytes);

#endif
