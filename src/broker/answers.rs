//! Events that answer one instance's task rather than being correlated: an event with a
//! `tasktoken` attribute answers the ASL task that handed the token out, one with a
//! `callbackid` attribute a durable function's callback. Both name their instance.

use crate::engine::asl::keys::token_instance;
use crate::engine::durable::CALLBACK_ATTR;
use crate::engine::Event;

/// Whether an event is addressed to one instance by a task token or a callback id.
pub fn is_answer(event: &Event) -> bool {
    event.attribute("tasktoken").is_some() || event.attribute(CALLBACK_ATTR).is_some()
}

/// The instance a task token answer (or a callback answer) goes to: `Some(Err)` when the
/// token or callback id is not one flowbroker handed out.
pub fn token_target(event: &Event) -> Option<std::result::Result<String, String>> {
    if let Some(cb) = event.attribute(CALLBACK_ATTR) {
        return Some(
            crate::durable::arn::read_callback(&cb)
                .map(|(instance, _)| instance)
                .map_err(|e| {
                    format!(
                        "{e} (answer with the CallbackId the durable function's callback \
                         operation got)"
                    )
                }),
        );
    }
    let token = event.attribute("tasktoken")?;
    Some(token_instance(&token).map(str::to_string).ok_or_else(|| {
        format!(
            "tasktoken {token:?} is not a task token flowbroker handed out (they look like \
             {{instance}}/{{visit}}/t{{attempt}}; answer with the tasktoken attribute of the \
             flowbroker.task.requested event)"
        )
    }))
}
