/*
 * ROS 2 names from C: a writer on the ROS 2 topic /chatter of type
 * std_msgs/msg/String is matched by a reader under the DDS names ROS 2 nodes
 * use (rt/chatter, std_msgs::msg::dds_::String_) and by a ROS 2 reader
 * given the relative name and ROS's IDL spelling of the type; both get the
 * message's CDR as written. Names ROS refuses are errors saying why. Two
 * participants on 127.0.0.1 in domain 73 (ports 25660 and 25662), so it
 * runs anywhere. Run by tests/c_abi.rs; prints "ok: N checks" and exits 0,
 * or names the failed check and exits 1.
 */
#include "check.h"

#include <errno.h>
#include <unistd.h>

/* ROS 2's default QoS for a publisher and a subscription. */
#define ROS_QOS "reliability=reliable;history=keep_last:10"

static void take_hello(struct detpath_dds_reader *r, const unsigned char *want, size_t len, const char *which)
{
	unsigned char buf[64];
	struct detpath_dds_sample_info info;
	long n = detpath_dds_take(r, buf, sizeof buf, &info, 5000000000LL);
	/* The sample goes out padded to 4 bytes, the padding counted in the encapsulation options (XTypes 7.6.3.1.2). */
	CHECK(n >= (long)len && n - (long)len == (buf[3] & 3), "%s: took %ld bytes, %d of them padding", which, n, buf[3] & 3);
	CHECK(memcmp(buf, want, 2) == 0 && memcmp(buf + 4, want + 4, len - 4) == 0 && info.valid_data == 1, "%s: the bytes written", which);
}

int main(void)
{
	struct detpath_dds_participant *a = detpath_dds_participant_new(73, "udp://127.0.0.1:25660", "127.0.0.1");
	struct detpath_dds_participant *b = detpath_dds_participant_new(73, "udp://127.0.0.1:25662", "127.0.0.1");
	CHECK(a && b, "two participants");

	CHECK(detpath_dds_ros2_writer_new(a, "/chat ter", "std_msgs/msg/String", NULL) == NULL, "a space in the topic");
	CHECK_MSG("\"/chat ter\"");
	CHECK(detpath_dds_ros2_reader_new(a, "/chatter", "example_interfaces/srv/AddTwoInts", NULL) == NULL, "a service type");
	CHECK_MSG("only messages");
	CHECK(detpath_dds_ros2_reader_new(a, "/chatter", "String", NULL) == NULL, "no package");
	CHECK_MSG("std_msgs/msg/String");
	CHECK(detpath_dds_ros2_writer_new(a, "/chatter", NULL, NULL) == NULL, "NULL type");
	CHECK_MSG("ros_type is NULL");
	CHECK(detpath_dds_ros2_writer_new(NULL, "/chatter", "std_msgs/msg/String", NULL) == NULL, "NULL participant");

	struct detpath_dds_writer *w = detpath_dds_ros2_writer_new(a, "/chatter", "std_msgs/msg/String", ROS_QOS);
	struct detpath_dds_reader *dds_names = detpath_dds_reader_new(b, "rt/chatter", "std_msgs::msg::dds_::String_", 0, ROS_QOS);
	struct detpath_dds_reader *ros_names = detpath_dds_ros2_reader_new(b, "chatter", "std_msgs::msg::String", ROS_QOS);
	struct detpath_dds_reader *unmapped = detpath_dds_reader_new(b, "chatter", "std_msgs/msg/String", 0, ROS_QOS);
	CHECK(w && dds_names && ros_names && unmapped, "writer and readers");

	struct detpath_dds_writer_status ws = {0};
	for (int i = 0; i < 500 && detpath_dds_writer_status(w, &ws) == 0 && ws.matched_subscriptions < 2; i++)
		usleep(10000);
	CHECK(ws.matched_subscriptions == 2, "the two readers under ROS 2's DDS names match, the unmapped one does not");

	/* std_msgs/msg/String "hello" in CDR, little endian: header, length with the NUL, bytes. */
	const unsigned char hello[] = {0, 1, 0, 0, 6, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0};
	CHECK(detpath_dds_write(w, hello, sizeof hello, NULL) == 0, "write");
	take_hello(dds_names, hello, sizeof hello, "rt/chatter reader");
	take_hello(ros_names, hello, sizeof hello, "ROS 2 reader");
	struct detpath_dds_reader_status rs;
	CHECK(detpath_dds_reader_status(unmapped, &rs) == 0 && rs.matched_publications == 0, "the unmapped names are another topic");

	CHECK(detpath_dds_reader_delete(unmapped) == 0 && detpath_dds_reader_delete(ros_names) == 0 && detpath_dds_reader_delete(dds_names) == 0, "delete readers");
	CHECK(detpath_dds_writer_delete(w) == 0 && detpath_dds_participant_delete(a) == 0 && detpath_dds_participant_delete(b) == 0, "delete all");
	CHECKS_DONE();
	return 0;
}
