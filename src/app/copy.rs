//! `y` copies what is selected to the clipboard of the operator's terminal with OSC 52,
//! which travels through SSH (and tmux): the quoted table name, a partition's predicate,
//! a snapshot id (then its Trino query id), a DAG id or its failing error line, a job's
//! error; `Y` copies the SQL of the confirm popup. Nothing copied holds a control
//! character: every text goes through [`crate::text::one_line`].

use super::action::Effect;
use super::state::{Level, Popup, State};
use crate::lakehouse::plan::Plan;
use crate::text::{clip, one_line};

/// The most the clipboard is given: terminals cap an OSC 52 payload (xterm at about
/// 100 kB of base64), and a longer text would be dropped whole.
pub const MAX_COPY_BYTES: usize = 64 * 1024;

/// Standard base64 (RFC 4648, with padding).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The escape sequence that sets the clipboard to `text`: OSC 52 on the `c` selection,
/// ended by BEL. Inside tmux (`tmux`), the same sequence follows wrapped in tmux's DCS
/// passthrough (its ESCs doubled): tmux with `set-clipboard on` takes the plain one,
/// with `allow-passthrough on` it hands the wrapped one to the outer terminal.
pub fn osc52(text: &str, tmux: bool) -> String {
    let seq = format!("\x1b]52;c;{}\x07", base64(text.as_bytes()));
    if tmux {
        let wrapped = format!("\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b"));
        format!("{seq}{wrapped}")
    } else {
        seq
    }
}

/// `text` as it may reach the clipboard: on one line, control characters escaped, at
/// most [`MAX_COPY_BYTES`] (cut on a character boundary).
pub fn clean(text: &str) -> String {
    let mut t = one_line(text);
    if t.len() > MAX_COPY_BYTES {
        let mut end = MAX_COPY_BYTES;
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        t.truncate(end);
    }
    t
}

/// Copy `text` (described as `what` in the status line).
pub fn emit(s: &mut State, what: &str, text: &str) -> Vec<Effect> {
    let text = clean(text);
    if text.is_empty() {
        s.set_status(Level::Info, format!("nothing to copy: no {what}"));
        return Vec::new();
    }
    s.set_status(Level::Info, format!("copied {what}: {}", clip(&text, 60)));
    s.copied = Some(text.clone());
    vec![Effect::Copy(text)]
}

/// `y` outside popups: what is selected on the tab, as the tab's feature says.
pub fn selection(s: &mut State) -> Vec<Effect> {
    (s.tab.ops().copy)(s)
}

/// `y` in a popup: the error it shows (a job's, a table's load error), else nothing.
pub fn in_popup(s: &mut State) -> Vec<Effect> {
    match s.popup.clone() {
        Some(Popup::Queue) => {
            let err = s
                .jobs
                .list
                .iter()
                .rev()
                .find_map(|j| j.error.as_ref().map(ToString::to_string));
            match err {
                Some(e) => emit(s, "job error", &e),
                None => emit(s, "job error", ""),
            }
        }
        Some(Popup::Health(t)) => {
            let err = s
                .tables
                .row(&t)
                .and_then(|r| r.error().map(ToString::to_string));
            match err {
                Some(e) => emit(s, "load error", &e),
                None => emit(s, "table name", &t.sql()),
            }
        }
        _ => Vec::new(),
    }
}

/// `Y` in the confirm popup: its statements, on one line each ending with `;`.
pub fn plan_sql(s: &mut State, plan: &Plan) -> Vec<Effect> {
    let sql: Vec<String> = plan.steps.iter().map(|st| format!("{};", st.sql)).collect();
    let what = if sql.len() == 1 {
        "SQL".to_string()
    } else {
        format!("SQL ({} statements)", sql.len())
    };
    emit(s, &what, &sql.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), enc, "{plain:?}");
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
        assert_eq!(base64("é".as_bytes()), "w6k=");
    }

    #[test]
    fn osc52_sets_the_clipboard_and_wraps_for_tmux() {
        let name = r#""iceberg"."zoning"."documents""#;
        let plain = osc52(name, false);
        assert_eq!(
            plain,
            "\x1b]52;c;ImljZWJlcmciLiJ6b25pbmciLiJkb2N1bWVudHMi\x07"
        );
        let tmux = osc52(name, true);
        assert!(tmux.starts_with(&plain), "the plain one for set-clipboard");
        let wrapped = &tmux[plain.len()..];
        assert_eq!(
            wrapped,
            "\x1bPtmux;\x1b\x1b]52;c;ImljZWJlcmciLiJ6b25pbmciLiJkb2N1bWVudHMi\x07\x1b\\"
        );
    }

    #[test]
    fn nothing_copied_holds_a_control_character() {
        let hostile = crate::text::hostile_sample();
        let c = clean(&hostile);
        assert!(crate::text::is_inert(&c), "{c:?}");
        assert!(!c.contains('\n') && !c.contains('\t'));
        let long = "é".repeat(MAX_COPY_BYTES);
        let c = clean(&long);
        assert!(c.len() <= MAX_COPY_BYTES && c.chars().all(|ch| ch == 'é'));
    }

    /// `y` copies the selection with OSC 52 (the runtime writes the sequence); `Y` the SQL.
    mod keys {
        use crate::app::action::{Action, Effect};
        use crate::app::maintenance::MaintenanceMsg;
        use crate::app::state::{Level, Popup};
        use crate::app::testing::*;
        use crate::app::update::update;
        use crate::lakehouse::model::SnapshotInfo;
        use crossterm::event::KeyCode;

        fn copied(fx: &[Effect]) -> &str {
            match fx {
                [Effect::Copy(text)] => text,
                _ => panic!("no copy: {fx:?}"),
            }
        }

        #[test]
        fn tables_copy_the_quoted_name_and_say_so() {
            let mut s = loaded();
            let fx = update(&mut s, key('y'));
            assert_eq!(copied(&fx), r#""iceberg"."zoning"."documents""#);
            let m = s.status.as_ref().unwrap();
            assert_eq!(m.level, Level::Info);
            assert!(m.text.contains("copied table name"), "{}", m.text);
        }

        #[test]
        fn partitions_copy_the_predicate_of_the_selected_partition() {
            let mut s = crate::app::testing::plans::on_partitions();
            let label = s.partitions.selected().unwrap().label.clone();
            let fx = update(&mut s, key('y'));
            assert_eq!(copied(&fx), format!("\"$partition\" = '{label}'"));
            assert!(
                s.status
                    .as_ref()
                    .unwrap()
                    .text
                    .contains("partition predicate")
            );
        }

        #[test]
        fn snapshots_copy_the_id_then_the_query_that_wrote_it() {
            let mut s = loaded();
            update(&mut s, key('3'));
            let info = SnapshotInfo {
                committed_at: t0(),
                snapshot_id: 4242,
                parent_id: None,
                operation: crate::lakehouse::model::SnapshotOperation::Replace,
                added_data_files: None,
                deleted_data_files: None,
                total_data_files: None,
                added_records: None,
                total_records: None,
                total_delete_files: None,
                added_files_size: None,
                removed_files_size: None,
                trino_user: None,
                trino_query_id: Some("20261129_120000_00001_abcde".into()),
            };
            update(
                &mut s,
                Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Loaded {
                    request: 1,
                    table: tref("zoning", "documents"),
                    result: Ok(vec![info]),
                }),
            );
            let fx = update(&mut s, key('y'));
            assert_eq!(copied(&fx), "4242");
            assert!(s.status.as_ref().unwrap().text.contains("y again"));
            let fx = update(&mut s, key('y'));
            assert_eq!(copied(&fx), "20261129_120000_00001_abcde");
            let fx = update(&mut s, key('y'));
            assert_eq!(copied(&fx), "4242", "and back");
        }

        #[test]
        fn dags_copy_the_id_then_the_failing_error_line_once_drilled_in() {
            let mut s = dags::with_dags();
            update(&mut s, key('4'));
            let fx = update(&mut s, key('y'));
            assert_eq!(copied(&fx), "compact_documents");
            update(&mut s, code(KeyCode::Enter));
            let fx = update(&mut s, key('y'));
            assert_eq!(copied(&fx), dags::ERROR);
            assert!(
                s.status
                    .as_ref()
                    .unwrap()
                    .text
                    .contains("copied error line")
            );
        }

        #[test]
        fn the_confirm_popup_copies_its_sql_with_capital_y_and_stays_open() {
            let mut s = crate::app::testing::plans::on_partitions();
            update(&mut s, key(' '));
            update(&mut s, key(' '));
            update(&mut s, key('o'));
            let d = crate::app::testing::plans::draft(&s);
            let epoch = s.conn.epoch;
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
            );
            drawn(&mut s);
            let fx = update(&mut s, key('Y'));
            let sql = copied(&fx).to_string();
            assert_eq!(sql.matches("EXECUTE optimize").count(), 2, "{sql}");
            assert!(!sql.contains('\n'), "one line: {sql}");
            assert!(matches!(s.popup, Some(Popup::Confirm(_))), "still asking");
            assert!(
                s.status
                    .as_ref()
                    .unwrap()
                    .text
                    .contains("SQL (2 statements)")
            );
            // y still runs it.
            let fx = update(&mut s, key('y'));
            assert!(matches!(&fx[..], [Effect::RunPlan { .. }]), "{fx:?}");
        }

        #[test]
        fn capital_y_outside_the_confirm_popup_copies_nothing() {
            let mut s = loaded();
            assert!(update(&mut s, key('Y')).is_empty());
        }

        #[test]
        fn a_popup_copies_the_error_it_shows() {
            let mut s = loaded();
            let hostile = query_failed("TABLE_NOT_FOUND", &crate::text::hostile_sample(), "q1");
            crate::app::testing::settle(&mut s, &tref("audit", "events"), Err(hostile));
            s.popup = Some(Popup::Health(tref("audit", "events")));
            let fx = update(&mut s, key('y'));
            let text = copied(&fx);
            assert!(text.starts_with("TABLE_NOT_FOUND"), "{text}");
            assert!(
                crate::text::is_inert(text) && !text.contains('\n'),
                "{text:?}"
            );
            assert!(crate::text::is_inert(&s.status.as_ref().unwrap().text));
        }
    }
}
