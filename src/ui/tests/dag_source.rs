//! The source view at 80x24, in UTF-8 and over `LANG=C` (ASCII), a hostile file's control
//! characters made visible; and the DAG list's row of a source Airflow refused.

use super::*;
use crate::airflow::AirflowError;
use crate::airflow::endpoints::sources::SourceKey;
use crate::airflow::scan::CodeRead;
use crate::app::dags::DagMsg;
use crate::app::testing::dags::with_dags;
use crate::dag_code::inspect;

/// `insta::assert_snapshot!` into `ui/tests/snapshots/`, beside the other screens'.
macro_rules! screen_snapshot {
    ($($args:tt)*) => {
        insta::with_settings!({ snapshot_path => "snapshots" }, {
            insta::assert_snapshot!($($args)*)
        })
    };
}

const PERMITS: &str = include_str!("../../../tests/lab/airflow/dags/compact_permits.py");

fn with_source(source: &str) -> State {
    let mut s = with_dags();
    update(
        &mut s,
        Action::Dags(DagMsg::Code {
            dag_id: "compact_documents".into(),
            result: Ok(CodeRead::Read {
                key: SourceKey::V2 {
                    dag_id: "compact_documents".into(),
                    version_number: Some(3),
                },
                source: source.into(),
                code: inspect(source, "compact_permits.py", "compact_permits"),
            }),
        }),
    );
    key(&mut s, '4');
    s
}

#[test]
fn the_source_view_at_80x24_in_utf8_and_ascii() {
    let mut s = with_source(PERMITS);
    screen_snapshot!("dag_code_detail_80x24", screen(&mut s, 80, 24).backend());
    key(&mut s, 'v');
    screen_snapshot!("dag_source_80x24", screen(&mut s, 80, 24).backend());
    s.ascii = true;
    let term = screen(&mut s, 80, 24);
    let text = term.backend().to_string();
    assert!(text.is_ascii(), "{text}");
    screen_snapshot!("dag_source_80x24_ascii", term.backend());
}

#[test]
fn a_hostile_files_control_characters_are_shown_escaped() {
    let evil = "from airflow.decorators import task\nfrom airflow.providers.trino.hooks.trino import TrinoHook\n@task(retries=1)\ndef t():\n    try:\n        TrinoHook().run('\u{1b}]52;c;cm0gLXJmIC8=\u{7}')\n    except Exception:  # \u{202e}gnirts\n        print('\u{1b}[2J')\n";
    let mut s = with_source(evil);
    key(&mut s, 'v');
    let text = screen(&mut s, 80, 24).backend().to_string();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text}"
    );
    assert!(text.contains("\\x1b]52;c;cm0gLXJmIC8=\\x07"), "{text}");
    assert!(text.contains("\\u{202e}gnirts"), "{text}");
    // The finding quotes the handler, cleaned the same way.
    assert!(
        text.contains("may hide failures: compact_permits.py:7"),
        "{text}"
    );
}

#[test]
fn a_refused_source_says_so_on_its_row() {
    let mut s = with_dags();
    update(
        &mut s,
        Action::Dags(DagMsg::Code {
            dag_id: "compact_documents".into(),
            result: Err(AirflowError::Auth {
                status: 403,
                url: "http://127.0.0.1:8080/api/v2/dagSources/compact_documents?version_number=3"
                    .into(),
                message: "Forbidden".into(),
            }),
        }),
    );
    key(&mut s, '4');
    screen_snapshot!("dag_source_refused_80x24", screen(&mut s, 80, 24).backend());
}
