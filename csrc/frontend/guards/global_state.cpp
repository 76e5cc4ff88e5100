// Reads of torch's thread-local global state that compiled code specialises on (grad mode).
// Assumes only c10's light headers here, so this file compiles fast and the rest stay torch-free.
#include <c10/core/GradMode.h>
#include "frontend/guards/guards_internal.h"

namespace cdynamo::guards {

bool grad_mode_enabled() { return c10::GradMode::is_enabled(); }

}  // namespace cdynamo::guards
