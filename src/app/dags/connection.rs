//! `F` on an incident that names a failing Airflow connection: the prompt for where it
//! should point (prefilled with the coordinator floe reads), the diff read from Airflow,
//! `y` to write host and port only, then the connection's new test in the status line.

use super::writes::DagConfirm;
use crate::airflow::{AirflowError, ApiVersion, Connection};
use crate::app::action::{DagWrite, Effect};
use crate::app::prompt::Prompt;
use crate::app::state::{Level, Popup, State};
use crate::mutation::connection::{diff_lines, parse_target};

/// `F`: ask where the incident's connection should point.
pub fn open(s: &mut State) -> Vec<Effect> {
    if !super::writes::may_write(s) {
        return Vec::new();
    }
    let Some(id) = (s.tab.ops().connection)(s) else {
        s.set_status(
            Level::Warn,
            "no Airflow connection to fix here: select an incident that names one (Triage tab)",
        );
        return Vec::new();
    };
    let text = prefill(s);
    s.prompt = Some(Prompt::Connection { id, text });
    Vec::new()
}

/// Where the prompt starts: the coordinator floe reads, unless floe reached it through
/// this machine's own address (a tunnel on a bastion), which means each worker's own
/// machine to Airflow; then the endpoint of a connection of Airflow's whose test passes
/// (the cluster's own name); never a loopback or link-local address. With nothing to
/// offer it starts empty and the status line says what is known.
fn prefill(s: &mut State) -> String {
    let local = crate::config::uri::is_local_host;
    let ours = url::Url::parse(&s.conn.trino_url)
        .ok()
        .and_then(|u| Some((u.host_str()?.to_string(), u.port_or_known_default()?)));
    if let Some((host, port)) = &ours
        && !local(host)
    {
        return format!("{host}:{port}");
    }
    let working: Vec<(String, String)> = s
        .dags
        .findings
        .iter()
        .filter(|f| f.rule == crate::health::Rule::AirflowConnectionWorks)
        .filter_map(|f| {
            let rest = f.message.strip_prefix("Airflow connection ")?;
            let (id, after) = rest.split_once(" points at ")?;
            Some((id.to_string(), after.split_whitespace().next()?.to_string()))
        })
        .collect();
    let is_local_endpoint = |e: &str| {
        e.rsplit_once(':')
            .is_some_and(|(h, _)| local(h.trim_start_matches('[').trim_end_matches(']')))
    };
    if let Some((_, e)) = working.iter().find(|(_, e)| !is_local_endpoint(e)) {
        return e.clone();
    }
    // The most useful first: the line is cut at the terminal's width.
    let mut said = vec!["type where the workers reach Trino".to_string()];
    if let Some((id, e)) = working.first() {
        said.push(format!("{id} → {e} passes its test"));
    }
    if let Some((host, port)) = ours {
        said.push(format!("not {host}:{port} (this machine's own address)"));
    }
    s.set_status(Level::Info, said.join("; "));
    String::new()
}

/// Enter in the prompt: read the connection to show the change.
pub fn plan(s: &mut State, id: String, text: &str) -> Vec<Effect> {
    if let Err(e) = parse_target(text) {
        s.set_status(Level::Error, e.to_string());
        return Vec::new();
    }
    s.set_status(Level::Info, format!("reading Airflow connection {id}…"));
    vec![Effect::PlanConnection {
        connection_id: id,
        target: text.trim().to_string(),
        epoch: s.conn.epoch,
    }]
}

/// The connection was read: the diff awaits `y`.
pub fn on_planned(
    s: &mut State,
    id: &str,
    target: &str,
    epoch: u64,
    result: Result<(Connection, ApiVersion), AirflowError>,
) {
    if epoch != s.conn.epoch {
        // Read on the profile floe has left: its diff is of another Airflow.
        s.set_status(
            Level::Warn,
            format!(
                "the diff of connection {id} was read on another profile: not shown (press F again)"
            ),
        );
        return;
    }
    if s.popup.is_some() {
        // Replacing the open popup would hand its answer (a `y` meant for it) to this write.
        s.set_status(
            Level::Warn,
            format!("the diff of connection {id} arrived while another popup was open: not shown (press F again)"),
        );
        return;
    }
    let (conn, api) = match result {
        Ok(r) => r,
        Err(e) => {
            s.set_status(Level::Error, format!("Airflow connection {id}: {e}"));
            return;
        }
    };
    let t = match parse_target(target) {
        Ok(t) => t,
        Err(e) => {
            s.set_status(Level::Error, e.to_string());
            return;
        }
    };
    if s.readonly {
        s.set_status(Level::Error, "read-only: Airflow writes are disabled");
        return;
    }
    s.status = None;
    s.popup = Some(Popup::ConfirmDag(Box::new(DagConfirm {
        lines: diff_lines(&conn, &t, api, s.conn.airflow_url.as_deref().unwrap_or("")),
        action: DagWrite::SetConnection {
            connection_id: id.to_string(),
            host: t.host,
            port: t.port,
        },
        shown: false,
    })));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::action::Action;
    use crate::app::dags::DagMsg;
    use crate::app::state::Tab;
    use crate::app::testing::{code, key};
    use crate::app::update::update;
    use crate::health::incidents::Next;
    use crossterm::event::KeyCode;

    /// The lab's incident on the Triage tab: a failing DAG whose connection is dead.
    fn on_incident() -> State {
        let mut s = crate::app::triage::tests::triaged();
        s.conn.trino_url = "https://trino.prod.internal:8443".into();
        s.conn.airflow_url = Some("https://airflow.prod/".into());
        update(&mut s, key('0'));
        assert_eq!(s.tab, Tab::Triage);
        let i = s
            .triage
            .incidents
            .iter()
            .position(|i| {
                i.next
                    .iter()
                    .any(|n| matches!(n, Next::FixConnection { connections, .. } if !connections.is_empty()))
            })
            .expect("an incident naming a connection");
        s.triage.grid.selected = i;
        s
    }

    fn conn() -> Connection {
        Connection {
            connection_id: "trino_documents".into(),
            conn_type: "trino".into(),
            description: None,
            host: Some("trino-old.internal".into()),
            login: Some("etl".into()),
            schema: None,
            port: Some(8080),
            extra: None,
            secret: Some(false),
        }
    }

    #[test]
    fn f_asks_where_then_shows_the_diff_then_y_writes_two_fields() {
        let mut s = on_incident();
        // A screen: popups take keys only once drawn.
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        assert!(update(&mut s, key('F')).is_empty());
        assert_eq!(
            s.prompt,
            Some(Prompt::Connection {
                id: "trino_documents".into(),
                text: "trino.prod.internal:8443".into()
            })
        );
        let fx = update(&mut s, code(KeyCode::Enter));
        assert_eq!(
            fx,
            vec![Effect::PlanConnection {
                connection_id: "trino_documents".into(),
                target: "trino.prod.internal:8443".into(),
                epoch: s.conn.epoch,
            }]
        );
        let a = planned(&s, "trino.prod.internal:8443");
        update(&mut s, a);
        let Some(Popup::ConfirmDag(c)) = &s.popup else {
            panic!("{:?}", s.popup)
        };
        assert!(
            c.lines.contains(&"+ host: trino.prod.internal".to_string()),
            "{:?}",
            c.lines
        );
        // Not before it is drawn, and only y.
        assert!(update(&mut s, key('y')).is_empty());
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        let fx = update(&mut s, key('y'));
        assert_eq!(
            fx,
            vec![Effect::WriteDag(DagWrite::SetConnection {
                connection_id: "trino_documents".into(),
                host: "trino.prod.internal".into(),
                port: 8443
            })]
        );
    }

    fn planned(s: &State, target: &str) -> Action {
        Action::Dags(DagMsg::ConnectionPlanned {
            connection_id: "trino_documents".into(),
            target: target.into(),
            epoch: s.conn.epoch,
            result: Ok((conn(), ApiVersion::V2)),
        })
    }

    #[test]
    fn floe_through_a_tunnel_never_offers_its_own_loopback_and_the_diff_warns_of_one() {
        for url in [
            "http://127.0.0.1:8443",
            "http://localhost:35019",
            "http://[::1]:8080",
        ] {
            let mut s = on_incident();
            s.conn.trino_url = url.into();
            update(&mut s, Action::Drawn(std::time::Instant::now()));
            update(&mut s, key('F'));
            assert_eq!(
                s.prompt,
                Some(Prompt::Connection {
                    id: "trino_documents".into(),
                    text: String::new()
                }),
                "{url}"
            );
            assert!(
                s.status
                    .as_ref()
                    .unwrap()
                    .text
                    .contains("this machine's own address"),
                "{:?}",
                s.status
            );
        }
        // Typed on purpose, it is written only after a diff that says what it means.
        let mut s = on_incident();
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        let a = planned(&s, "127.0.0.1:8443");
        update(&mut s, a);
        let Some(Popup::ConfirmDag(c)) = &s.popup else {
            panic!("{:?}", s.popup)
        };
        assert!(
            c.lines[0].ends_with("on https://airflow.prod/"),
            "{:?}",
            c.lines
        );
        assert!(c.lines[1].contains("loopback"), "{:?}", c.lines);
    }

    #[test]
    fn through_a_tunnel_a_working_connections_own_name_is_offered_never_a_loopback() {
        let works = |id: &str, at: &str| crate::health::Finding {
            rule: crate::health::Rule::AirflowConnectionWorks,
            severity: crate::health::Severity::Info,
            message: format!("Airflow connection {id} points at {at} and its test passes"),
            penalty: 0,
        };
        let mut s = on_incident();
        s.conn.trino_url = "http://127.0.0.1:8443".into();
        s.dags.findings.push(works("trino_local", "127.0.0.1:8443"));
        s.dags
            .findings
            .push(works("trino_default", "trino.prod.internal:8443"));
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        update(&mut s, key('F'));
        assert_eq!(
            s.prompt,
            Some(Prompt::Connection {
                id: "trino_documents".into(),
                text: "trino.prod.internal:8443".into()
            })
        );
        // Only loopback ones: nothing offered, the working one named in the status line.
        let mut s = on_incident();
        s.conn.trino_url = "http://127.0.0.1:8443".into();
        s.dags
            .findings
            .push(works("trino_default", "127.0.0.1:8443"));
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        update(&mut s, key('F'));
        assert!(matches!(&s.prompt, Some(Prompt::Connection { text, .. }) if text.is_empty()));
        let said = &s.status.as_ref().unwrap().text;
        assert!(
            said.contains("trino_default → 127.0.0.1:8443 passes its test"),
            "{said}"
        );
    }

    #[test]
    fn a_diff_arriving_over_another_popup_leaves_it_and_its_y() {
        let mut s = on_incident();
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        // The trigger's confirmation is open (and drawn) when Airflow's answer arrives.
        update(&mut s, key('t'));
        assert!(
            matches!(s.popup, Some(Popup::ConfirmDag(ref c)) if matches!(c.action, DagWrite::Trigger { .. }))
        );
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        let a = planned(&s, "trino.prod.internal:8443");
        update(&mut s, a);
        let fx = update(&mut s, key('y'));
        assert!(
            matches!(fx.as_slice(), [Effect::WriteDag(DagWrite::Trigger { .. })]),
            "the y answers the trigger it was shown: {fx:?}"
        );
        assert!(
            !fx.iter()
                .any(|e| matches!(e, Effect::WriteDag(DagWrite::SetConnection { .. }))),
            "{fx:?}"
        );
        // The quit question too.
        let mut s = on_incident();
        s.popup = Some(Popup::QuitJobs { shown: true });
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        let a = planned(&s, "trino.prod.internal:8443");
        update(&mut s, a);
        assert_eq!(s.popup, Some(Popup::QuitJobs { shown: true }));
        assert!(s.status.as_ref().unwrap().text.contains("not shown"));
    }

    #[test]
    fn a_profile_switch_closes_the_prompt_and_drops_a_diff_read_before_it() {
        let mut s = on_incident();
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        update(&mut s, key('F'));
        assert!(matches!(s.prompt, Some(Prompt::Connection { .. })));
        let before = planned(&s, "trino.prod.internal:8443");
        s.apply_profile(crate::app::testing::profile_view("staging"));
        assert_eq!(
            s.prompt, None,
            "Enter would write staging's trino_documents"
        );
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        update(&mut s, before);
        assert_eq!(s.popup, None);
        assert!(
            s.status.as_ref().unwrap().text.contains("another profile"),
            "{:?}",
            s.status
        );
    }

    #[test]
    fn quitting_while_the_write_is_in_flight_asks_first() {
        let mut s = on_incident();
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        let a = planned(&s, "trino.prod.internal:8443");
        update(&mut s, a);
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        let fx = update(&mut s, key('y'));
        let [Effect::WriteDag(action)] = &fx[..] else {
            panic!("{fx:?}")
        };
        let action = action.clone();
        assert!(update(&mut s, key('q')).is_empty(), "asks");
        assert!(!s.quit);
        assert_eq!(s.popup, Some(Popup::QuitJobs { shown: false }));
        let q = crate::app::maintenance::quit::question(&s);
        assert!(
            q.iter()
                .any(|l| l.contains("fix_connection trino_documents")),
            "{q:?}"
        );
        update(&mut s, code(KeyCode::Esc));
        update(&mut s, Action::Drawn(std::time::Instant::now()));
        update(&mut s, key('n'));
        // Answered: q leaves at once.
        let epoch = s.conn.epoch;
        update(
            &mut s,
            Action::Dags(DagMsg::Written {
                action,
                result: Ok("connection trino_documents → trino.prod.internal:8443".into()),
                epoch,
            }),
        );
        assert!(s.airflow_writes.is_empty());
        let fx = update(&mut s, key('q'));
        assert!(s.quit, "{fx:?}");
    }

    #[test]
    fn a_bad_target_or_read_only_sends_nothing() {
        let mut s = on_incident();
        update(&mut s, key('F'));
        for _ in 0..20 {
            update(&mut s, code(KeyCode::Backspace));
        }
        for c in "nohost".chars() {
            update(&mut s, key(c));
        }
        assert!(update(&mut s, code(KeyCode::Enter)).is_empty());
        assert!(
            s.status
                .as_ref()
                .unwrap()
                .text
                .contains("expected host:port"),
            "{:?}",
            s.status
        );
        let mut ro = on_incident();
        ro.readonly = true;
        ro.keymap = crate::app::keymap::Keymap::default().with_readonly(true);
        assert!(update(&mut ro, key('F')).is_empty());
        assert!(ro.prompt.is_none());
    }
}
