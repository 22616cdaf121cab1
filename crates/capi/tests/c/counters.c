/*
 * The counters by name from C (udp on 127.0.0.1, runs anywhere):
 * detpath_counter_count() matches struct detpath_counters, every name is
 * there once and has help, an index out of range is an error, and
 * detpath_counter_value() agrees with the struct after real traffic. Run by
 * tests/c_abi.rs; prints "ok: N checks" and exits 0, or names the failed
 * check and exits 1.
 */
#include "check.h"

#include <errno.h>
#include <stdint.h>

int main(void)
{
	size_t n = detpath_counter_count();
	CHECK(n * sizeof(uint64_t) == sizeof(struct detpath_counters), "count %zu vs struct of %zu bytes", n, sizeof(struct detpath_counters));
	for (size_t i = 0; i < n; i++) {
		const char *name = detpath_counter_name(i);
		CHECK(name && *name, "name %zu", i);
		CHECK(detpath_counter_help(i) && *detpath_counter_help(i), "help of %s", name);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(name, detpath_counter_name(j)) != 0, "%s twice", name);
	}
	CHECK(detpath_counter_name(n) == NULL, "name past the end");
	CHECK(detpath_counter_help(n) == NULL, "help past the end");
	CHECK(strstr(detpath_last_error(), "out of range") != NULL, "the message says why");

	struct detpath_endpoint *a = detpath_open("udp://127.0.0.1:0");
	struct detpath_endpoint *b = detpath_open("udp://127.0.0.1:0");
	CHECK(a && b, "open");
	struct detpath_addr to;
	CHECK(detpath_local_addr(b, &to) == 0, "local addr");
	for (int k = 0; k < 3; k++)
		CHECK(detpath_send_to_addr(a, "abcd", 4, &to) == 0, "send %d", k);
	unsigned char buf[64];
	struct detpath_rx_meta meta;
	for (int k = 0; k < 3; k++)
		CHECK(detpath_recv(b, buf, sizeof buf, 1000000, &meta) == 4, "recv %d", k);

	struct detpath_counters c;
	CHECK(detpath_counters(a, &c) == 0, "counters");
	const uint64_t *as_array = (const uint64_t *)&c;
	int saw_tx = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 99;
		CHECK(detpath_counter_value(a, i, &v) == 0, "value %zu", i);
		CHECK(v == as_array[i], "%s: %llu by index, %llu in the struct", detpath_counter_name(i), (unsigned long long)v,
		      (unsigned long long)as_array[i]);
		if (strcmp(detpath_counter_name(i), "tx_packets") == 0) {
			CHECK(v == 3 && c.tx_packets == 3, "tx_packets %llu", (unsigned long long)v);
			saw_tx = 1;
		}
		if (strcmp(detpath_counter_name(i), "tx_no_neigh") == 0)
			CHECK(&as_array[i] == &c.tx_no_neigh, "tx_no_neigh sits where the table says");
	}
	CHECK(saw_tx, "tx_packets is a counter");
	uint64_t v;
	CHECK(detpath_counter_value(a, n, &v) == -EINVAL, "index past the end");
	CHECK(detpath_counter_value(a, 0, NULL) == -EINVAL, "NULL out");
	CHECK(detpath_counter_value(NULL, 0, &v) == -EBADF, "NULL handle");
	detpath_close(a);
	detpath_close(b);
	CHECKS_DONE();
	return 0;
}
