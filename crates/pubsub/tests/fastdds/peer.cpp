// A Fast DDS 2.9 participant that publishes or subscribes ddsperf's KeyedSeq,
// driven by tests/fastdds.rs against detpath's `pubsub pub|sub` CLI.
//
// It prints one JSON object per line on stdout: {"ev":"matched"},
// {"ev":"sample",...} per sample taken (sub), {"ev":"done",...} at the end.
// Discovery is unicast to --peer (the detpath node) on the --addr interface,
// besides Fast DDS's default multicast.

#include "KeyedSeqPubSubTypes.h"

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::Locator_t;
using eprosima::fastrtps::rtps::IPLocator;
using Clock = std::chrono::steady_clock;

struct Args
{
    std::string role;
    int domain = 0;
    std::string topic = "DDSPerfRDataKS";
    bool reliable = true;
    bool transient_local = false;
    int depth = 100;
    size_t size = 32;       // ddsperf's size: 12 + baggage octets
    long count = 10;        // pub: samples written; sub: samples to take before "done"
    int keys = 1;           // pub: instances, keyval = seq % keys
    double duration = 20;   // seconds before giving up
    double linger = 1;      // pub: seconds after the last write (acknowledgements, late joiners)
    double rate = 0;        // pub: samples per second (0: as fast as the writer takes them)
    double delay = 0;       // pub: seconds between the match and the first write
    std::string peer;       // the detpath node's address
    std::string addr;       // this side's interface address
    unsigned peer_port = 0; // the detpath node's port
};

static void usage()
{
    std::fprintf(stderr,
            "usage: peer pub|sub [--domain D] [--topic T] [--best-effort] [--transient-local] [--depth N]\n"
            "       [--size S] [--count N] [--keys K] [--duration S] [--linger S] [--rate HZ] [--delay S]\n"
            "       --peer IP --peer-port P [--addr IP]\n");
    std::exit(2);
}

static Args parse(
        int argc,
        char** argv)
{
    Args a;
    if (argc < 2)
    {
        usage();
    }
    a.role = argv[1];
    if (a.role != "pub" && a.role != "sub")
    {
        usage();
    }
    for (int i = 2; i < argc; ++i)
    {
        std::string k = argv[i];
        auto val = [&]() -> std::string {
                    if (i + 1 >= argc)
                    {
                        usage();
                    }
                    return argv[++i];
                };
        if (k == "--domain") a.domain = std::stoi(val());
        else if (k == "--topic") a.topic = val();
        else if (k == "--best-effort") a.reliable = false;
        else if (k == "--transient-local") a.transient_local = true;
        else if (k == "--depth") a.depth = std::stoi(val());
        else if (k == "--size") a.size = std::stoul(val());
        else if (k == "--count") a.count = std::stol(val());
        else if (k == "--keys") a.keys = std::stoi(val());
        else if (k == "--duration") a.duration = std::stod(val());
        else if (k == "--linger") a.linger = std::stod(val());
        else if (k == "--rate") a.rate = std::stod(val());
        else if (k == "--delay") a.delay = std::stod(val());
        else if (k == "--peer") a.peer = val();
        else if (k == "--peer-port") a.peer_port = std::stoul(val());
        else if (k == "--addr") a.addr = val();
        else usage();
    }
    if (a.size < 12 || a.keys < 1 || a.depth < 1)
    {
        usage();
    }
    return a;
}

static double since(
        Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

static DomainParticipant* make_participant(
        const Args& a)
{
    DomainParticipantQos pq;
    pq.name("detpath-fastdds-peer");
    // UDPv4 only (no shared memory: the peer is in another namespace), on
    // the test's interface, datagrams up to 64 KB (Fast DDS's default).
    pq.transport().use_builtin_transports = false;
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    if (!a.addr.empty())
    {
        udp->interfaceWhiteList.push_back(a.addr);
    }
    pq.transport().user_transports.push_back(udp);
    if (!a.peer.empty())
    {
        Locator_t peer;
        IPLocator::setIPv4(peer, a.peer);
        peer.port = a.peer_port;
        pq.wire_protocol().builtin.initialPeersList.push_back(peer);
    }
    return DomainParticipantFactory::get_instance()->create_participant(a.domain, pq);
}

static void qos_common(
        const Args& a,
        ReliabilityQosPolicy& rel,
        DurabilityQosPolicy& dur,
        HistoryQosPolicy& hist)
{
    rel.kind = a.reliable ? RELIABLE_RELIABILITY_QOS : BEST_EFFORT_RELIABILITY_QOS;
    dur.kind = a.transient_local ? TRANSIENT_LOCAL_DURABILITY_QOS : VOLATILE_DURABILITY_QOS;
    hist.kind = KEEP_LAST_HISTORY_QOS;
    hist.depth = a.depth;
}

static int run_pub(
        const Args& a,
        DomainParticipant* dp,
        Topic* topic)
{
    Publisher* pub = dp->create_publisher(PUBLISHER_QOS_DEFAULT);
    DataWriterQos wq = pub->get_default_datawriter_qos();
    qos_common(a, wq.reliability(), wq.durability(), wq.history());
    wq.resource_limits().max_samples = a.depth * a.keys;
    wq.resource_limits().max_instances = a.keys;
    wq.resource_limits().max_samples_per_instance = a.depth;
    // Large samples: writes return once queued; fragments leave from Fast DDS's thread.
    wq.publish_mode().kind = ASYNCHRONOUS_PUBLISH_MODE;
    DataWriter* w = pub->create_datawriter(topic, wq);
    if (w == nullptr)
    {
        std::fprintf(stderr, "peer: create_datawriter failed\n");
        return 2;
    }
    auto t0 = Clock::now();
    PublicationMatchedStatus st;
    while (since(t0) < a.duration)
    {
        w->get_publication_matched_status(st);
        if (st.current_count > 0)
        {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (st.current_count == 0)
    {
        std::printf("{\"ev\":\"unmatched\"}\n");
        std::fflush(stdout);
        return 3;
    }
    std::printf("{\"ev\":\"matched\",\"t\":%.3f}\n", since(t0));
    std::fflush(stdout);
    // Best effort: the writer matched us before we may have matched it; give discovery a moment.
    std::this_thread::sleep_for(std::chrono::duration<double>(a.delay));
    KeyedSeq s;
    s.baggage().assign(a.size - 12, 0xee);
    long written = 0;
    auto t_first = Clock::now();
    for (long i = 1; i <= a.count && since(t0) < a.duration; ++i)
    {
        if (a.rate > 0)
        {
            std::this_thread::sleep_until(t_first + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>((i - 1) / a.rate)));
        }
        s.seq(static_cast<uint32_t>(i));
        s.keyval(static_cast<uint32_t>(i % a.keys));
        // A reliable KEEP_LAST writer blocks (max_blocking_time) when its
        // readers lag; retry until it takes the sample.
        while (!w->write(&s))
        {
            if (since(t0) > a.duration)
            {
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ++written;
    }
    bool acked = true;
    if (a.reliable)
    {
        acked = w->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(std::max(1.0, a.duration - since(t0)))) == ReturnCode_t::RETCODE_OK;
    }
    std::printf("{\"ev\":\"written\",\"n\":%ld,\"acked\":%s,\"t\":%.3f}\n", written, acked ? "true" : "false", since(t0));
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(a.linger));
    std::printf("{\"ev\":\"done\",\"written\":%ld}\n", written);
    std::fflush(stdout);
    return 0;
}

static int run_sub(
        const Args& a,
        DomainParticipant* dp,
        Topic* topic)
{
    Subscriber* sub = dp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    DataReaderQos rq = sub->get_default_datareader_qos();
    qos_common(a, rq.reliability(), rq.durability(), rq.history());
    rq.resource_limits().max_instances = 64;
    rq.resource_limits().max_samples_per_instance = a.depth;
    rq.resource_limits().max_samples = 64 * a.depth;
    DataReader* r = sub->create_datareader(topic, rq);
    if (r == nullptr)
    {
        std::fprintf(stderr, "peer: create_datareader failed\n");
        return 2;
    }
    auto t0 = Clock::now();
    bool matched = false;
    long taken = 0, bad = 0;
    KeyedSeq s;
    SampleInfo info;
    while (since(t0) < a.duration && taken < a.count)
    {
        if (!matched)
        {
            SubscriptionMatchedStatus st;
            r->get_subscription_matched_status(st);
            if (st.current_count > 0)
            {
                matched = true;
                std::printf("{\"ev\":\"matched\",\"t\":%.3f}\n", since(t0));
                std::fflush(stdout);
            }
        }
        bool any = false;
        while (r->take_next_sample(&s, &info) == ReturnCode_t::RETCODE_OK)
        {
            any = true;
            if (!info.valid_data)
            {
                continue;
            }
            // ddsperf's baggage is 0xee throughout; count any other content.
            bool ok = s.baggage().size() + 12 == a.size;
            for (size_t i = 0; ok && i < s.baggage().size(); i += 4093)
            {
                ok = s.baggage()[i] == 0xee;
            }
            ok = ok && (s.baggage().empty() || s.baggage().back() == 0xee);
            bad += !ok;
            ++taken;
            std::printf("{\"ev\":\"sample\",\"seq\":%u,\"key\":%u,\"size\":%zu,\"ok\":%s}\n", s.seq(), s.keyval(), s.baggage().size() + 12,
                    ok ? "true" : "false");
        }
        std::fflush(stdout);
        if (!any)
        {
            r->wait_for_unread_message(eprosima::fastrtps::Duration_t(0, 20000000));
        }
    }
    std::printf("{\"ev\":\"done\",\"taken\":%ld,\"bad\":%ld,\"t\":%.3f}\n", taken, bad, since(t0));
    std::fflush(stdout);
    return 0;
}

int main(
        int argc,
        char** argv)
{
    Args a = parse(argc, argv);
    DomainParticipant* dp = make_participant(a);
    if (dp == nullptr)
    {
        std::fprintf(stderr, "peer: create_participant failed\n");
        return 2;
    }
    TypeSupport type(new KeyedSeqPubSubType());
    type.register_type(dp);
    Topic* topic = dp->create_topic(a.topic, type.get_type_name(), TOPIC_QOS_DEFAULT);
    int rc = a.role == "pub" ? run_pub(a, dp, topic) : run_sub(a, dp, topic);
    dp->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(dp);
    return rc;
}
