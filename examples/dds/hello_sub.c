// Receives ten greetings of hello::Hello (IDL: struct Hello { @key long id; unsigned long count; string text; })
// and prints them: hello_sub SPEC PEER, e.g. hello_sub udp://10.0.0.2:7410 10.0.0.1
#include <detpath.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: hello_sub SPEC PEER\n"), 2;
    struct detpath_dds_participant *dp = detpath_dds_participant_new(0, argv[1], argv[2]);
    struct detpath_dds_reader *r = !dp ? NULL : detpath_dds_reader_new(dp, "HelloWorld", "hello::Hello", 1,
                                                                    "reliability=reliable;durability=transient_local;history=keep_last:10");
    if (!r) return fprintf(stderr, "hello_sub: %s\n", detpath_last_error()), 1;
    unsigned char s[256];
    struct detpath_dds_sample_info info;
    for (int got = 0; got < 10;) {
        long n = detpath_dds_take(r, s, sizeof s - 1, &info, 30000000000LL); // waits up to 30 s
        if (n < 0) return fprintf(stderr, "hello_sub: %s\n", detpath_last_error()), 1;
        if (!info.valid_data || n < 17 || s[1] != 1) continue; // a dispose, or not XCDR1 little endian
        int32_t id;
        uint32_t count;
        memcpy(&id, s + 4, 4);
        memcpy(&count, s + 8, 4);
        s[n] = 0;
        printf("%d %u: %s\n", (int)id, (unsigned)count, (char *)s + 16), got++;
    }
    detpath_dds_reader_delete(r);
    return detpath_dds_participant_delete(dp) < 0;
}
