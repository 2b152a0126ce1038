use super::*;

fn sig(json: &str) -> TrinoType {
    TrinoType::from_signature(&serde_json::from_str(json).unwrap()).unwrap()
}

#[test]
fn modern_signatures() {
    assert_eq!(
        sig(r#"{"rawType":"varchar","arguments":[{"kind":"LONG","value":2147483647}]}"#),
        TrinoType::Varchar
    );
    assert_eq!(
        sig(r#"{"rawType":"timestamp with time zone","arguments":[{"kind":"LONG","value":3}]}"#),
        TrinoType::TimestampTz { precision: 3 }
    );
    assert_eq!(
        sig(
            r#"{"rawType":"decimal","arguments":[{"kind":"LONG","value":10},{"kind":"LONG","value":2}]}"#
        ),
        TrinoType::Decimal {
            precision: 10,
            scale: 2
        }
    );
    assert_eq!(
        sig(
            r#"{"rawType":"map","arguments":[{"kind":"TYPE","value":{"rawType":"varchar","arguments":[]}},{"kind":"TYPE","value":{"rawType":"varchar","arguments":[]}}]}"#
        ),
        TrinoType::Map(Box::new(TrinoType::Varchar), Box::new(TrinoType::Varchar))
    );
    assert_eq!(
        sig(r#"{"rawType":"row","arguments":[
            {"kind":"NAMED_TYPE","value":{"fieldName":{"name":"district"},"typeSignature":{"rawType":"varchar","arguments":[]}}},
            {"kind":"NAMED_TYPE","value":{"typeSignature":{"rawType":"date","arguments":[]}}}]}"#),
        TrinoType::Row(vec![
            (Some("district".into()), TrinoType::Varchar),
            (None, TrinoType::Date)
        ])
    );
}

#[test]
fn presto_era_signatures() {
    assert_eq!(
        sig(
            r#"{"rawType":"varchar","typeArguments":[],"literalArguments":[],"arguments":[{"kind":"LONG_LITERAL","value":2147483647}]}"#
        ),
        TrinoType::Varchar
    );
    assert_eq!(
        sig(
            r#"{"rawType":"array","arguments":[{"kind":"TYPE_SIGNATURE","value":{"rawType":"bigint","arguments":[]}}]}"#
        ),
        TrinoType::Array(Box::new(TrinoType::BigInt))
    );
    assert_eq!(
        sig(
            r#"{"rawType":"row","arguments":[{"kind":"NAMED_TYPE_SIGNATURE","value":{"fieldName":{"name":"a","delimited":false},"typeSignature":"bigint"}}]}"#
        ),
        TrinoType::Row(vec![(Some("a".into()), TrinoType::BigInt)])
    );
}

#[test]
fn deeply_nested_type_text_is_an_error_not_a_stack_overflow() {
    let deep = format!("{}bigint{}", "array(".repeat(100_000), ")".repeat(100_000));
    let e = TrinoType::parse(&deep).unwrap_err().to_string();
    assert!(e.contains("nested deeper than"), "{e}");
    let rows = format!("{}x bigint{}", "row(a ".repeat(50_000), ")".repeat(50_000));
    assert!(TrinoType::parse(&rows).is_err());
    // Real types, a few levels deep, still parse.
    let ok = format!("{}bigint{}", "array(".repeat(20), ")".repeat(20));
    assert!(TrinoType::parse(&ok).is_ok());
}

#[test]
fn type_texts() {
    assert_eq!(TrinoType::parse("bigint").unwrap(), TrinoType::BigInt);
    assert_eq!(
        TrinoType::parse("timestamp(6) with time zone").unwrap(),
        TrinoType::TimestampTz { precision: 6 }
    );
    assert_eq!(
        TrinoType::parse("timestamp(3)").unwrap(),
        TrinoType::Timestamp { precision: 3 }
    );
    assert_eq!(TrinoType::parse("varchar(12)").unwrap(), TrinoType::Varchar);
    assert_eq!(
        TrinoType::parse(
            r#"row(district varchar, "filed at day" date, ts timestamp(3) with time zone)"#
        )
        .unwrap(),
        TrinoType::Row(vec![
            (Some("district".into()), TrinoType::Varchar),
            (Some("filed at day".into()), TrinoType::Date),
            (Some("ts".into()), TrinoType::TimestampTz { precision: 3 }),
        ])
    );
    assert_eq!(
        TrinoType::parse("row(double precision, bigint)").unwrap(),
        TrinoType::Row(vec![(None, TrinoType::Double), (None, TrinoType::BigInt)])
    );
    assert_eq!(
        TrinoType::parse("map(integer, array(row(min bigint, max bigint)))").unwrap(),
        TrinoType::Map(
            Box::new(TrinoType::Integer),
            Box::new(TrinoType::Array(Box::new(TrinoType::Row(vec![
                (Some("min".into()), TrinoType::BigInt),
                (Some("max".into()), TrinoType::BigInt)
            ]))))
        )
    );
    assert_eq!(
        TrinoType::parse("interval day to second").unwrap(),
        TrinoType::IntervalDayToSecond
    );
    assert_eq!(
        TrinoType::parse("qdigest(bigint)").unwrap(),
        TrinoType::Other("qdigest".into())
    );
    assert!(TrinoType::parse("row(a bigint").is_err());
    assert!(TrinoType::parse("").is_err());
}
