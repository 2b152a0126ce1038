use super::*;
use reqwest::header::HeaderValue;

fn reply(status: u16, text: &str) -> Reply {
    Reply {
        status: StatusCode::from_u16(status).unwrap(),
        headers: HeaderMap::new(),
        text: text.into(),
        cut: 0,
        attempts: 1,
        gave_up: false,
    }
}

fn busy(status: u16) -> Failure {
    Failure::Busy(reply(status, ""))
}

fn transport(kind: Transport) -> Failure {
    Failure::Transport {
        kind,
        message: "connection closed before message completed".into(),
    }
}

fn starting(r: &Reply) -> bool {
    r.status == StatusCode::SERVICE_UNAVAILABLE && r.text.contains("still initializing")
}

#[test]
fn what_is_sent_again() {
    use Idempotency::{Idempotent, Mutation};
    let policy = |mutations| Policy::new(Duration::ZERO, Duration::ZERO, Duration::ZERO, mutations);
    let own_503 = policy(Mutations::RefusedOr(starting));
    let refused_only = policy(Mutations::RefusedOnly);
    for p in [&own_503, &refused_only] {
        assert!(!may_retry(
            p,
            Idempotent,
            &transport(Transport::Permanent),
            1
        ));
        assert!(may_retry(p, Mutation, &transport(Transport::Connect), 3));
        assert!(!may_retry(p, Mutation, &transport(Transport::Connect), 4));
        assert!(may_retry(
            p,
            Idempotent,
            &transport(Transport::Transient),
            9
        ));
        assert!(!may_retry(p, Mutation, &transport(Transport::Transient), 1));
        assert!(!may_retry(
            p,
            Idempotent,
            &Failure::TooLarge(1, StatusCode::OK),
            1
        ));
        for status in [429, 502, 503, 504] {
            assert!(may_retry(p, Idempotent, &busy(status), 9));
            assert!(!may_retry(p, Mutation, &busy(status), 1), "{status}");
        }
    }
    let trino_503 = Failure::Busy(reply(503, "Trino server is still initializing"));
    assert!(may_retry(&own_503, Mutation, &trino_503, 1));
    assert!(!may_retry(&refused_only, Mutation, &trino_503, 1));
}

#[test]
fn a_mutation_without_a_clear_answer_may_have_run() {
    use Idempotency::{Idempotent, Mutation};
    for status in [502, 503, 504] {
        let e = busy(status).finish(Mutation, 1, false).unwrap_err();
        assert!(
            matches!(&e, NetFailure::MayHaveRun { message } if message.starts_with(&format!("HTTP {status}"))),
            "{e:?}"
        );
        assert!(busy(status).finish(Idempotent, 1, false).is_ok());
    }
    let e = transport(Transport::Transient)
        .finish(Mutation, 1, false)
        .unwrap_err();
    assert!(matches!(e, NetFailure::MayHaveRun { .. }), "{e:?}");
    // The server's own refusal, retried until the time ran out: it never started.
    let r = Failure::Busy(reply(503, "Trino server is still initializing"))
        .finish(Mutation, 5, true)
        .unwrap();
    assert!(r.gave_up);
    // A write answered 2xx happened, even when its answer is too large to read.
    let e = Failure::TooLarge(1 << 20, StatusCode::OK)
        .finish(Mutation, 1, false)
        .unwrap_err();
    assert!(
        matches!(&e, NetFailure::MayHaveRun { message } if message.starts_with("HTTP 200 answered")),
        "{e:?}"
    );
    let e = Failure::TooLarge(1 << 20, StatusCode::OK)
        .finish(Idempotent, 1, false)
        .unwrap_err();
    assert!(matches!(e, NetFailure::TooLarge { .. }), "{e:?}");
    // 429 is an answer, not an ambiguity.
    assert_eq!(busy(429).finish(Mutation, 1, false).unwrap().status, 429);
    let e = transport(Transport::Connect)
        .finish(Mutation, 4, false)
        .unwrap_err();
    assert!(matches!(e, NetFailure::Transport { .. }), "{e:?}");
}

#[test]
fn redirects_stay_on_their_origin() {
    let u = |s: &str| s.parse::<Url>().unwrap();
    let from = u("https://airflow.example/api/v2/dags");
    assert_eq!(
        redirect_refusal(&from, &u("https://airflow.example/api/v2/dags/")),
        None
    );
    let m = redirect_refusal(&from, &u("http://airflow.example/api/v2/dags")).unwrap();
    assert_eq!(
        m,
        "refusing the redirect from https://airflow.example/api/v2/dags to http://airflow.example/api/v2/dags: it downgrades https to http"
    );
    assert!(redirect_refusal(&from, &u("https://sso.example/login")).is_some());
    assert!(redirect_refusal(&from, &u("https://airflow.example:8443/x")).is_some());
    // An upgrade to https on the same host is followed.
    let plain = u("http://airflow.example/api/v2/dags");
    assert_eq!(
        redirect_refusal(&plain, &u("https://airflow.example/api/v2/dags")),
        None
    );
}

#[test]
fn retry_after_forms() {
    let mut h = HeaderMap::new();
    h.insert("retry-after", HeaderValue::from_static("2"));
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert(
        "retry-after",
        HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
    );
    assert_eq!(
        retry_after(&h),
        Some(Duration::ZERO),
        "a past date means now"
    );
    h.insert("retry-after", HeaderValue::from_static("soon"));
    assert_eq!(retry_after(&h), None);
    h.insert("retry-after", HeaderValue::from_static("86400"));
    assert_eq!(retry_after(&h), Some(MAX_RETRY_AFTER), "capped");
}

#[test]
fn retry_after_never_panics_and_stays_capped() {
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let p = |v: &str| parse_retry_after(v, now);
    for garbage in [
        "NaN",
        "nan",
        "inf",
        "-inf",
        "Infinity",
        "-1",
        "-0.5",
        "1e30",
        "1e400",
        "",
        "  ",
        "soon",
        "0x10",
        "1.2.3",
        "+5",
        "Wed, 99 Oct 2015 07:28:00 GMT",
        "\u{0}",
    ] {
        assert_eq!(p(garbage), None, "{garbage:?}");
    }
    assert_eq!(p("0"), Some(Duration::ZERO));
    assert_eq!(p(" 7 "), Some(Duration::from_secs(7)));
    assert_eq!(p("1.5"), Some(Duration::from_millis(1500)));
    assert_eq!(p("99999999999999999999999999"), Some(MAX_RETRY_AFTER));
    assert_eq!(p("3600.5"), Some(MAX_RETRY_AFTER));
    // The three HTTP-date forms of RFC 9110.
    assert_eq!(
        p("Mon, 30 Nov 2026 12:00:10 GMT"),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        p("Monday, 30-Nov-26 12:00:10 GMT"),
        Some(Duration::from_secs(10))
    );
    assert_eq!(p("Mon Nov 30 12:00:10 2026"), Some(Duration::from_secs(10)));
    assert_eq!(p("Wed, 01 Jan 3000 00:00:00 GMT"), Some(MAX_RETRY_AFTER));
    assert_eq!(p("Thu, 01 Jan 1970 00:00:00 GMT"), Some(Duration::ZERO));
}
