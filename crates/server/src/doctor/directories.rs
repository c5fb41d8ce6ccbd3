//! `[[directory]]` (issue 40): each upstream directory answers, and its lockout policy
//! (OpenLDAP ppolicy `pwdMaxFailure`, Active Directory `lockoutThreshold`, read as the
//! configured identity) stays above the per-user failure budget, so that guesses let
//! through can never lock a user out of the directory.

use std::time::Duration;

use super::{Finding, Level};
use crate::config::Config;

const SUBJECT: &str = "directory";

pub(super) async fn check(config: &Config, out: &mut Vec<Finding>) {
    let built = match crate::upstream::directories(&config.directories) {
        Ok(Some(d)) => d,
        Ok(None) => return,
        Err(e) => {
            out.push(Finding::new(Level::Fail, SUBJECT, e.to_string()));
            return;
        }
    };
    for (file, dir) in config.directories.iter().zip(built.clients()) {
        let name = &file.name;
        let wait = Duration::from_millis(file.timeouts.check_ms);
        let policy = match tokio::time::timeout(wait, dir.directory_policy()).await {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                out.push(Finding::new(
                    Level::Warn,
                    SUBJECT,
                    format!(
                        "{name}: no server answered ({e}); its users get \"unavailable\" \
                         and its lockout policy is unchecked"
                    ),
                ));
                continue;
            }
            Err(_) => {
                out.push(Finding::new(
                    Level::Warn,
                    SUBJECT,
                    format!("{name}: no answer within timeouts.check_ms"),
                ));
                continue;
            }
        };
        let budget = file.failure_budget;
        match (policy.lockout_threshold, policy.budget_warning(budget)) {
            // Guesses let through could lock users out: that breaks production.
            (Some(_), Some(w)) => {
                out.push(Finding::new(Level::Fail, SUBJECT, format!("{name}: {w}")))
            }
            (None, Some(w)) => out.push(Finding::new(Level::Warn, SUBJECT, format!("{name}: {w}"))),
            (Some(t), None) => {
                if file.lockout_threshold.is_some_and(|c| c != t) {
                    out.push(Finding::new(
                        Level::Warn,
                        SUBJECT,
                        format!(
                            "{name}: lockout_threshold is {:?} but the directory locks after \
                             {t} failures; set lockout_threshold = {t}",
                            file.lockout_threshold
                        ),
                    ));
                }
                out.push(Finding::new(
                    Level::Ok,
                    SUBJECT,
                    format!(
                        "{name}: {} answered; it locks after {t} failed binds, the failure \
                         budget ({budget}) stays below",
                        policy.server
                    ),
                ));
            }
            (None, None) => out.push(Finding::new(
                Level::Ok,
                SUBJECT,
                format!(
                    "{name}: {} answered; it does not lock accounts",
                    policy.server
                ),
            )),
        }
    }
}
