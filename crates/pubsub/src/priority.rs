//! From a writer's TRANSPORT_PRIORITY to the wire: the traffic class and
//! DSCP its datagrams carry (issue 39; filled in by the priority work).
