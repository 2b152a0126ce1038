use crate::app::action::{Action, Effect};
use crate::app::state::{Level, Popup};
use crate::app::testing::*;
use crate::app::update::update;
use crate::ui::breakdown::health_breakdown as breakdown;
use crossterm::event::KeyCode;

#[test]
fn help_and_info_popups_close_with_esc() {
    let mut s = loaded();
    update(&mut s, key('?'));
    assert_eq!(s.popup, Some(Popup::Help));
    update(&mut s, key('j'));
    assert_eq!(
        s.popup,
        Some(Popup::Help),
        "keys do not leak through a popup"
    );
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.popup, None);
    update(&mut s, key('i'));
    assert_eq!(s.popup, Some(Popup::Health(tref("zoning", "documents"))));
    let lines = breakdown(&s, &tref("zoning", "documents"));
    assert!(lines.iter().any(|(_, l)| l.contains("compaction_stale")));
    update(&mut s, key('q'));
    assert_eq!(s.popup, None);
    assert!(!s.quit, "q closes the popup first");
}

#[test]
fn terminate_and_ctrl_c_quit() {
    let mut s = loaded();
    assert_eq!(update(&mut s, Action::Terminate), vec![Effect::Quit]);
    let mut s = loaded();
    update(&mut s, key('/'));
    assert_eq!(
        update(&mut s, ctrl('c')),
        vec![Effect::Quit],
        "even from a prompt"
    );
}

#[test]
fn a_trino_login_url_stays_in_the_status_line_until_the_login_ends() {
    use crate::trino::LoginEvent;
    let mut s = loaded();
    let url = "https://trino.example:8443/oauth2/token/initiate/abc";
    let open = LoginEvent::Open {
        url: url.parse().unwrap(),
        coordinator: "https://trino.example:8443/".parse().unwrap(),
        user: "carol".into(),
        timeout: std::time::Duration::from_secs(300),
    };
    assert!(
        update(
            &mut s,
            Action::Connection(crate::app::connection::ConnectionMsg::Login(open))
        )
        .is_empty()
    );
    let m = s.status.clone().unwrap();
    assert_eq!(m.level, Level::Warn, "not an Info that fades");
    assert!(m.text.contains(url) && m.text.contains("5m"), "{}", m.text);
    let later = s.now + chrono::Duration::seconds(60);
    update(&mut s, Action::Tick(later));
    assert!(s.status.as_ref().unwrap().text.contains(url));
    let done = LoginEvent::Done {
        expires_at: later + chrono::Duration::hours(1),
    };
    update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::Login(done)),
    );
    let m = s.status.clone().unwrap();
    assert_eq!(m.level, Level::Info);
    assert!(m.text.contains("login done"), "{}", m.text);
    update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::Login(
            LoginEvent::Failed("access_denied".into()),
        )),
    );
    let m = s.status.clone().unwrap();
    assert_eq!(m.level, Level::Error);
    assert!(m.text.contains("access_denied"));
}
