/*
 * The DDS API from C with bad input and the corner cases of a take and of
 * the reader's wait: every case is an error with a message, never a crash. Two participants on
 * 127.0.0.1 in domain 71 (ports 25160 and 25162), so it runs anywhere.
 * Run by tests/c_abi.rs; prints "ok: N checks" and exits 0, or names the
 * failed check and exits 1.
 */
#include "check.h"

#include <errno.h>
#include <unistd.h>

#define QOS "reliability=reliable;history=keep_all"

int main(void)
{
	CHECK(detpath_dds_participant_new(71, NULL, NULL) == NULL, "NULL spec");
	CHECK_MSG("spec is NULL");
	CHECK(detpath_dds_participant_new(71, "nosuch://x", "127.0.0.1") == NULL, "unknown datapath");
	CHECK_MSG("unknown datapath");
	CHECK(detpath_dds_participant_new(71, "udp://127.0.0.1:25160", "127.0.0.1,nowhere") == NULL, "bad peer");
	CHECK_MSG("not an IPv4 address");

	struct detpath_dds_participant *a = detpath_dds_participant_new(71, "udp://127.0.0.1:25160", "127.0.0.1");
	struct detpath_dds_participant *b = detpath_dds_participant_new(71, "udp://127.0.0.1:25162", "127.0.0.1");
	CHECK(a && b, "two participants");

	CHECK(detpath_dds_writer_new(a, "T", "t::T", 0, "reliabilty=reliable") == NULL, "misspelt policy");
	CHECK_MSG("unknown policy \"reliabilty\"");
	CHECK(detpath_dds_reader_new(a, "T", "t::T", 0, "history=keep_last:0") == NULL, "depth 0");
	CHECK_MSG("keep_last:N with N >= 1");
	CHECK(detpath_dds_writer_new(a, NULL, "t::T", 0, NULL) == NULL, "NULL topic");
	CHECK_MSG("topic is NULL");

	struct detpath_dds_writer *w = detpath_dds_writer_new(a, "T", "t::T", 0, QOS ";max_sample_size=64");
	struct detpath_dds_reader *r = detpath_dds_reader_new(b, "T", "t::T", 0, QOS);
	CHECK(w && r, "writer and reader");

	unsigned char big[100] = {0, 1, 0, 0};
	CHECK(detpath_dds_write(w, big, 2, NULL) == -EINVAL, "no encapsulation header");
	CHECK_MSG("encapsulation header");
	CHECK(detpath_dds_write(w, big, sizeof big, NULL) == -EMSGSIZE, "above max_sample_size");
	CHECK_MSG("max_sample_size of 64 bytes");
	CHECK(detpath_dds_write(w, NULL, 8, NULL) == -EINVAL, "NULL payload");
	CHECK(detpath_dds_write((struct detpath_dds_writer *)r, big, 8, NULL) == -EBADF, "a reader handle as a writer");
	CHECK_MSG("not a writer's");
	CHECK(detpath_dds_write((struct detpath_dds_writer *)0x12345, big, 8, NULL) == -EBADF, "made-up handle");
	CHECK(detpath_dds_write(NULL, big, 8, NULL) == -EBADF, "NULL handle");

	struct detpath_dds_sample_info info;
	unsigned char buf[64];
	CHECK(detpath_dds_take(r, buf, sizeof buf, &info, 0) == -EAGAIN, "nothing yet");
	CHECK_MSG("no sample");
	CHECK(detpath_dds_take(r, buf, sizeof buf, NULL, 0) == -EINVAL, "NULL info");

	struct detpath_dds_writer_status ws = {0};
	for (int i = 0; i < 500 && detpath_dds_writer_status(w, &ws) == 0 && ws.matched_subscriptions == 0; i++)
		usleep(10000);
	CHECK(ws.matched_subscriptions == 1, "matched");

	CHECK(detpath_dds_reader_wait(r, 100000000LL) == 0, "nothing to wait for");
	CHECK(detpath_dds_reader_wait((struct detpath_dds_reader *)w, 0) == -EBADF, "a writer handle as a reader");
	unsigned char s[40] = {0, 1, 0, 0};
	for (int i = 4; i < 40; i++)
		s[i] = (unsigned char)i;
	CHECK(detpath_dds_write(w, s, sizeof s, NULL) == 0, "write");
	CHECK(detpath_dds_reader_wait(r, 5000000000LL) == 1, "the wait wakes on the sample");
	CHECK(detpath_dds_reader_wait(r, 0) == 1, "it stays until taken");
	/* Too small a buffer: the sample stays and info says how much room it needs. */
	CHECK(detpath_dds_take(r, buf, 8, &info, 5000000000LL) == -EMSGSIZE, "small buffer");
	CHECK(info.len == sizeof s, "needed %zu", info.len);
	CHECK(detpath_dds_take(r, buf, sizeof buf, &info, 0) == (long)sizeof s, "then it fits");
	CHECK(memcmp(buf, s, sizeof s) == 0 && info.valid_data == 1 && info.sequence_number == 1, "the same bytes");
	CHECK(detpath_dds_writer_wait_acks(w, 5000000000LL) == 1, "acknowledged");

	CHECK(detpath_dds_reader_wait(r, 0) == 0, "taken: nothing waits");
	CHECK(detpath_dds_reader_count_undecodable(r, 3) == 0, "count undecodable");
	CHECK(detpath_dds_reader_report_undecodable(r, &info) == 0, "report undecodable");
	CHECK(detpath_dds_reader_report_undecodable(r, NULL) == -EINVAL, "report without info");
	struct detpath_dds_reader_status rs;
	CHECK(detpath_dds_reader_status(r, &rs) == 0 && rs.undecodable == 4 && rs.matched_publications == 1 && rs.lost == 0, "status");
	CHECK(detpath_dds_reader_status(r, NULL) == -EINVAL, "NULL out");

	CHECK(detpath_dds_writer_delete(w) == 0, "delete");
	CHECK(detpath_dds_write(w, s, sizeof s, NULL) == -EBADF, "use after delete");
	CHECK_MSG("deleted");
	CHECK(detpath_dds_writer_delete(w) == -EBADF, "delete twice");
	CHECK(detpath_dds_reader_delete(r) == 0 && detpath_dds_participant_delete(a) == 0 && detpath_dds_participant_delete(b) == 0, "delete all");
	CHECK(detpath_dds_participant_delete(a) == -EBADF, "participant twice");
	CHECKS_DONE();
	return 0;
}
