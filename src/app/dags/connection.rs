//! `F` on an incident that names a failing Airflow connection: the prompt for where it
//! should point (prefilled with the coordinator floe reads), the diff read from Airflow,
//! `y` to write host and port only, then the connection's new test in the status line.

use super::writes::DagConfirm;
use crate::airflow::{AirflowError, ApiVersion, Connection};
use crate::app::action::{DagWrite, Effect};
use crate::app::prompt::Prompt;
use crate::app::state::{Level, Popup, State, Tab};
use crate::health::triage::Next;
use crate::maintain::connection::{diff_lines, parse_target};

/// The connection the selected incident says to fix.
pub fn incident_connection(s: &State) -> Option<String> {
    s.triage.selected()?.next.iter().find_map(|n| match n {
        Next::FixConnection { connections, .. } => connections.first().cloned(),
        _ => None,
    })
}

/// `F`: ask where the incident's connection should point.
pub fn open(s: &mut State) -> Vec<Effect> {
    if !super::writes::may_write(s) {
        return Vec::new();
    }
    let id = match s.tab {
        Tab::Triage => incident_connection(s),
        _ => None,
    };
    let Some(id) = id else {
        s.set_status(
            Level::Warn,
            "no Airflow connection to fix here: select an incident that names one (Triage tab)",
        );
        return Vec::new();
    };
    // The coordinator floe reads is where a connection to "the lakehouse Trino" points.
    let text = url::Url::parse(&s.conn.trino_url)
        .ok()
        .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
        .unwrap_or_default();
    s.prompt = Some(Prompt::Connection { id, text });
    Vec::new()
}

/// Enter in the prompt: read the connection to show the change.
pub fn plan(s: &mut State, id: String, text: &str) -> Vec<Effect> {
    if let Err(e) = parse_target(text) {
        s.set_status(Level::Error, e);
        return Vec::new();
    }
    s.set_status(Level::Info, format!("reading Airflow connection {id}…"));
    vec![Effect::PlanConnection {
        connection_id: id,
        target: text.trim().to_string(),
    }]
}

/// The connection was read: the diff awaits `y`.
pub fn on_planned(
    s: &mut State,
    id: &str,
    target: &str,
    result: Result<(Connection, ApiVersion), AirflowError>,
) {
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
            s.set_status(Level::Error, e);
            return;
        }
    };
    if s.readonly {
        s.set_status(Level::Error, "read-only: Airflow writes are disabled");
        return;
    }
    s.status = None;
    s.popup = Some(Popup::ConfirmDag(Box::new(DagConfirm {
        lines: diff_lines(&conn, &t, api),
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
    use crate::app::testing::{code, key};
    use crate::app::update::update;
    use crossterm::event::KeyCode;

    /// The lab's incident on the Triage tab: a failing DAG whose connection is dead.
    fn on_incident() -> State {
        let mut s = crate::app::triage::tests::triaged();
        s.conn.trino_url = "http://127.0.0.1:35019".into();
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
        }
    }

    #[test]
    fn f_asks_where_then_shows_the_diff_then_y_writes_two_fields() {
        let mut s = on_incident();
        // A screen: popups take keys only once drawn.
        update(&mut s, Action::Drawn);
        assert!(update(&mut s, key('F')).is_empty());
        assert_eq!(
            s.prompt,
            Some(Prompt::Connection {
                id: "trino_documents".into(),
                text: "127.0.0.1:35019".into()
            })
        );
        let fx = update(&mut s, code(KeyCode::Enter));
        assert_eq!(
            fx,
            vec![Effect::PlanConnection {
                connection_id: "trino_documents".into(),
                target: "127.0.0.1:35019".into()
            }]
        );
        update(
            &mut s,
            Action::Dags(DagMsg::ConnectionPlanned {
                connection_id: "trino_documents".into(),
                target: "127.0.0.1:35019".into(),
                result: Ok((conn(), ApiVersion::V2)),
            }),
        );
        let Some(Popup::ConfirmDag(c)) = &s.popup else {
            panic!("{:?}", s.popup)
        };
        assert!(
            c.lines.contains(&"+ host: 127.0.0.1".to_string()),
            "{:?}",
            c.lines
        );
        // Not before it is drawn, and only y.
        assert!(update(&mut s, key('y')).is_empty());
        update(&mut s, Action::Drawn);
        let fx = update(&mut s, key('y'));
        assert_eq!(
            fx,
            vec![Effect::WriteDag(DagWrite::SetConnection {
                connection_id: "trino_documents".into(),
                host: "127.0.0.1".into(),
                port: 35019
            })]
        );
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
