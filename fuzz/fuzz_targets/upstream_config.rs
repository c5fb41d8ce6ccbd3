//! Fuzz an upstream directory's configuration (issue 40): any TOML text through parsing and
//! validation; when valid, its DN and filter templates get an arbitrary user name. A bad
//! configuration is an error naming the field, and no name panics or breaks out of its
//! value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use portcullis_upstream::{DirectoryConfig, DnTemplate, FilterTemplate};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // The first line is the user name, the rest the configuration.
    let (user, config) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(t) = DnTemplate::new("uid={user},ou=people,dc=example,dc=org") {
        // Every separator in the name is escaped: the DN has the template's three RDN
        // separators, no more.
        assert_eq!(unescaped_commas(&t.render(user)), 3);
    }
    if let Ok(f) = FilterTemplate::new("(&(objectClass=person)(uid={user}))") {
        let _ = f.render(user);
        let text = f.render_text(user);
        assert_eq!(text.matches('(').count(), 3);
    }
    let Ok(cfg) = toml::from_str::<DirectoryConfig>(config) else { return };
    if cfg.validate().is_ok() {
        if let Some(t) = &cfg.bind_dn_template {
            let _ = DnTemplate::new(t).map(|t| t.render(user));
        }
        if let Some(s) = &cfg.search {
            let _ = FilterTemplate::new(&s.filter).map(|f| f.render(user));
        }
    }
});

fn unescaped_commas(dn: &str) -> usize {
    let mut count = 0;
    let mut chars = dn.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            ',' => count += 1,
            _ => {}
        }
    }
    count
}
