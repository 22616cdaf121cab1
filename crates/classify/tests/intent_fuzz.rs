//! Property tests of the intent parser (`parse_intent`, the fuzz entry point):
//! never panics on random bytes, on random JSON, or on mutations of valid
//! intents; what it accepts has a mask and a consistent key.
use detpath_classify::intent::parse_intent;
use proptest::prelude::*;

const SEEDS: &[&str] = &[
    r#"{"Resources": [{"resourceId": "F8A4C949", "encapsulationID1": "00000445", "encapsulationType1": "vxlan"}, {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"}, {"resourceId": "5A07C580", "srcIP": "192.188.0.140", "dstPort": "5004"}], "Action": {"actionType": "INSERT", "actionName": "PRIO_QUEUE", "flow_hash": "E918D704", "rx_queue": "1"}, "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}]}"#,
    r#"{"Resources": [{"encapsulationType1": "vlan", "encapsulationID1": 7}, {"srcIP": "2001:db8::/48", "protocol": "tcp", "srcPort": 80}], "Action": {"actionType": "INSERT", "actionName": "FORWARD_WHEN_OVERLOADED", "alt_node": 1, "priority": 9}}"#,
    r#"{"Resources": [{"dstIP": "10.0.0.0/8"}], "Action": {"actionType": "INSERT", "actionName": "XSK", "queue": "0"}}"#,
    r#"{"Resources": [{"topic": "Control", "priority": "10..49", "priority_map": "0=CS0,1=AF21,50=EF"}, {"dstPort": 7400}], "Action": {"actionType": "INSERT", "actionName": "PASS"}}"#,
    r#"{"Resources": [{"dscp": ["EF", "AF41..AF43", 8]}], "Action": {"actionType": "INSERT", "actionName": "DROP"}}"#,
];

fn check(bytes: &[u8]) {
    if let Ok(rule) = parse_intent(bytes) {
        let (k, m) = rule.key_mask();
        assert_ne!(m, Default::default(), "an accepted rule matches something");
        assert_eq!(k.and(&m), k, "the key lies within its mask");
        let (keys, m2) = rule.keys();
        assert_eq!(m2, m);
        assert!(!keys.is_empty() && keys.len() <= 64, "one key per DSCP of the class, at most 64");
        assert!(keys.iter().all(|k| k.and(&m) == *k), "every key lies within the mask");
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-zA-Z0-9:./ -]{0,12}".prop_map(serde_json::Value::from),
        prop_oneof![Just("vxlan"), Just("gtp"), Just("vlan"), Just("INSERT"), Just("PASS"), Just("10.0.0.1"), Just("fd00::1/64"), Just("0x445")]
            .prop_map(serde_json::Value::from),
        prop_oneof![Just("EF"), Just("AF11..EF"), Just("0..63"), Just("-5..40"), Just("0=CS0,1=AF21"), Just("1=EF,2=0")].prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            Just("Resources".to_string()),
            Just("Action".to_string()),
            Just("Params".to_string()),
            Just("actionType".to_string()),
            Just("actionName".to_string()),
            Just("encapsulationID1".to_string()),
            Just("encapsulationType1".to_string()),
            Just("encapsulationType2".to_string()),
            Just("srcIP".to_string()),
            Just("dstPort".to_string()),
            Just("dscp".to_string()),
            Just("priority".to_string()),
            Just("priority_map".to_string()),
            Just("topic".to_string()),
            Just("rx_queue".to_string()),
            Just("paramName".to_string()),
            "[a-zA-Z]{1,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(key, inner, 0..5).prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(b in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&b);
    }

    #[test]
    fn random_json(v in json_value()) {
        check(v.to_string().as_bytes());
    }

    #[test]
    fn mutated_intents(seed in 0..SEEDS.len(), muts in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)) {
        let mut b = SEEDS[seed].as_bytes().to_vec();
        for (i, byte, op) in muts {
            if b.is_empty() { break; }
            let at = i.index(b.len());
            match op {
                0 => b[at] = byte,
                1 => { b.remove(at); }
                _ => b.insert(at, byte),
            }
        }
        check(&b);
    }
}

#[test]
fn seeds_are_valid() {
    for s in SEEDS {
        parse_intent(s.as_bytes()).unwrap();
    }
}
