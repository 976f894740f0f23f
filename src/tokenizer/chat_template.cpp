// Public face of the chat-template engine: parse once, render many times. Engine errors
// (jinja::Error, thrown internally) become a Status here and never escape.
#include "tokenizer/chat_template.h"

#include <new>

#include "tokenizer/chat_template_eval.h"

namespace edge {

struct ChatTemplate::Impl {
  std::string source;
  jinja::Body program;
};

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

Expected<ChatTemplate> ChatTemplate::parse(const std::string& source) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  try {
    impl->program = jinja::parse_tokens(jinja::tokenize(source));
  } catch (const jinja::Error& e) {
    return Status::invalid_format(std::string("chat template: ") + e.what());
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("chat template: out of memory while parsing");
  } catch (const std::exception& e) {
    return Status::internal(std::string("chat template: ") + e.what());
  }
  return ChatTemplate(std::move(impl));
}

const std::string& ChatTemplate::source() const { return impl_->source; }

nlohmann::ordered_json ChatTemplate::variables(const ChatTemplateInputs& inputs) {
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  vars["messages"] = inputs.messages;
  vars["tools"] = inputs.tools;
  vars["add_generation_prompt"] = inputs.add_generation_prompt;
  vars["bos_token"] = inputs.bos_token;
  vars["eos_token"] = inputs.eos_token;
  if (inputs.extra.is_object()) {
    for (auto it = inputs.extra.begin(); it != inputs.extra.end(); ++it) vars[it.key()] = it.value();
  }
  return vars;
}

namespace {

template <typename Json>
Expected<std::string> render_json(const jinja::Body& program, const Json& vars) {
  if (!vars.is_object()) return Status::invalid_argument("chat template variables must be a JSON object");
  try {
    auto globals = std::make_shared<jinja::Scope>();
    jinja::install_globals(*globals);
    for (auto it = vars.begin(); it != vars.end(); ++it) globals->vars[it.key()] = jinja::from_json(it.value());
    jinja::Interpreter interp;
    return interp.render(program, globals);
  } catch (const jinja::Error& e) {
    const std::string where = e.line > 0 ? " (template line " + std::to_string(e.line) + ")" : "";
    return Status::invalid_argument(std::string("chat template: ") + e.what() + where);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("chat template: out of memory while rendering");
  } catch (const std::exception& e) {
    return Status::internal(std::string("chat template: ") + e.what());
  }
}

}  // namespace

Expected<std::string> ChatTemplate::render_variables(const nlohmann::ordered_json& vars) const {
  return render_json(impl_->program, vars);
}

Expected<std::string> ChatTemplate::render_variables(const nlohmann::json& vars) const {
  return render_json(impl_->program, vars);
}

Expected<std::string> ChatTemplate::render(const ChatTemplateInputs& inputs) const {
  return render_variables(variables(inputs));
}

}  // namespace edge
