// Publishes ten greetings of hello::Hello (IDL: struct Hello { @key long id; unsigned long count; string text; }),
// serialized here as XCDR1 little endian: hello_pub SPEC PEER, e.g. hello_pub udp://10.0.0.1:7410 10.0.0.2
#include <detpath.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: hello_pub SPEC PEER\n"), 2;
    struct detpath_dds_participant *dp = detpath_dds_participant_new(0, argv[1], argv[2]);
    struct detpath_dds_writer *w = !dp ? NULL : detpath_dds_writer_new(dp, "HelloWorld", "hello::Hello", 1,
                                                                    "reliability=reliable;durability=transient_local;history=keep_last:10");
    if (!w) return fprintf(stderr, "hello_pub: %s\n", detpath_last_error()), 1;
    struct detpath_dds_writer_status st = {0};
    while (detpath_dds_writer_status(w, &st) == 0 && st.matched_subscriptions == 0) usleep(20000);
    for (uint32_t count = 0; count < 10; count++) {
        unsigned char s[64] = {0, 1, 0, 0, 4, 0, 0, 0}, key_hash[16] = {0, 0, 0, 4}; // header, id 4; key: id big endian
        uint32_t n = (uint32_t)snprintf((char *)s + 16, 40, "hello from C %u", count) + 1;
        memcpy(s + 8, &count, 4);
        memcpy(s + 12, &n, 4);
        if (detpath_dds_write(w, s, 16 + n, key_hash) < 0) return fprintf(stderr, "hello_pub: %s\n", detpath_last_error()), 1;
    }
    detpath_dds_writer_wait_acks(w, 10000000000LL); // until the subscriber has them all
    detpath_dds_writer_delete(w);
    return detpath_dds_participant_delete(dp) < 0;
}
