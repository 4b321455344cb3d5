use serde::Serialize;
use tauri::{State, Url};

use super::{AppSettings, AppState, CommandError, StartupNotice};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    pub version: &'static str,
    pub database_path: String,
    pub notices: Vec<StartupNotice>,
}

#[tauri::command]
pub async fn app_status(state: State<'_, AppState>) -> Result<AppStatus, CommandError> {
    Ok(AppStatus {
        version: env!("CARGO_PKG_VERSION"),
        database_path: state.db.path().display().to_string(),
        notices: state.notices.clone(),
    })
}

#[tauri::command]
pub async fn app_settings(state: State<'_, AppState>) -> Result<AppSettings, CommandError> {
    Ok(AppSettings::load(&state.db)?)
}

#[tauri::command]
pub async fn save_app_settings(
    state: State<'_, AppState>,
    settings: AppSettings,
) -> Result<(), CommandError> {
    Ok(settings.save(&state.db)?)
}

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("not a valid link: {0}")]
    Invalid(String),
    #[error("links with the scheme '{0}' are not opened")]
    Scheme(String),
    #[error("no browser could open the link: {0}")]
    Open(#[from] std::io::Error),
}

/// Schemes a click on a link in a message may open in the system browser or mail client.
const OPENABLE_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// Opens a link from a message in the system's browser, after the user clicked it.
#[tauri::command]
pub async fn open_link(url: String) -> Result<(), CommandError> {
    Ok(open_checked(&url)?)
}

fn open_checked(url: &str) -> Result<(), LinkError> {
    let parsed = checked_link(url)?;
    open::that_detached(parsed.as_str())?;
    Ok(())
}

fn checked_link(url: &str) -> Result<Url, LinkError> {
    let parsed = Url::parse(url.trim()).map_err(|error| LinkError::Invalid(error.to_string()))?;
    if !OPENABLE_SCHEMES.contains(&parsed.scheme()) {
        return Err(LinkError::Scheme(parsed.scheme().to_string()));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_and_mail_links_open() {
        assert!(checked_link("https://example.com/a?b=c").is_ok());
        assert!(checked_link("mailto:someone@example.com").is_ok());
        for refused in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,<script>",
            "vbscript:x",
            "tauri://localhost",
        ] {
            assert!(matches!(checked_link(refused), Err(LinkError::Scheme(_))), "{refused}");
        }
        assert!(matches!(checked_link("not a url"), Err(LinkError::Invalid(_))));
    }
}
