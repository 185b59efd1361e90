"""The page's own script: the chat's shortcuts, the edit box's keys, the composer's names.

Gradio runs ``SCRIPT`` once when the page loads (``launch(js=…)``); it listens on the
document, so it holds for components drawn later. Esc stops a running answer (from the
composer or anywhere outside a dialog or an edit box), cancels an edit being typed or
waiting for its confirmation; Ctrl/Cmd+Shift+O starts a new chat. In the chat's edit box
Enter saves and Shift+Enter starts a new line. The composer gets its accessible name
("Message") here too (Gradio's MultimodalTextbox gives its textarea none), and its file
chip the file's name (Gradio's shows an icon).

``NARROW_SIDEBAR`` (``launch(head=…)``): on a phone (a window narrower than ``NARROW``) the
chats sidebar starts closed. Gradio opens it at every width, and there it would cover the
chat; the script closes it the moment it opens, in the page itself, so it neither shows
for a frame nor closes later under a reader's finger (a round trip to the server, as
before, came a few hundred milliseconds after). docs/app.md.
"""

from __future__ import annotations

from app.chat_handlers import NARROW

SCRIPT = """() => {
  const shown = (el) => !!el && el.getClientRects().length > 0
    && getComputedStyle(el).visibility !== 'hidden';
  const press = (selector) => {
    const button = document.querySelector(selector);
    if (!shown(button)) return false;
    button.click();
    return true;
  };
  const name = () => {
    const box = document.querySelector('#chat-input textarea');
    if (box && box.getAttribute('aria-label') !== 'Message') {
      box.setAttribute('aria-label', 'Message');
    }
  };
  // The composer's file chip shows the file's name (Gradio's shows an icon only).
  let names = [];
  const label = () => {
    document.querySelectorAll('#chat-input [aria-label="File thumbnail"]').forEach((item, i) => {
      const file = names[i];
      if (!file) return;
      let tag = item.querySelector('.attachment-name');
      if (!tag) {
        tag = document.createElement('span');
        tag.className = 'attachment-name';
        item.appendChild(tag);
      }
      if (tag.textContent !== file) tag.textContent = file;
    });
  };
  const chosen = (files) => {
    if (files && files.length) names = [...files].map((file) => file.name || 'pasted image');
  };
  const inComposer = (event) => event.target instanceof Element
    && !!event.target.closest('#chat-input');
  document.addEventListener('change', (event) => {
    if (inComposer(event) && event.target.files) chosen(event.target.files);
  }, true);
  document.addEventListener('drop', (event) => {
    if (inComposer(event)) chosen(event.dataTransfer?.files);
  }, true);
  document.addEventListener('paste', (event) => {
    if (inComposer(event)) chosen(event.clipboardData?.files);
  }, true);
  const watch = () => { name(); label(); };
  watch();
  new MutationObserver(watch).observe(document.body, {childList: true, subtree: true});
  document.addEventListener('keydown', (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (event.isComposing) return;
    if (target && target.matches('#chatbot .edit-textarea')) {
      if (event.key === 'Enter' && !event.shiftKey) {
        event.preventDefault();
        press('#chatbot button[aria-label="Submit"]');
      } else if (event.key === 'Escape') {
        event.preventDefault();
        press('#chatbot button[aria-label="Cancel"]');
      }
      return;
    }
    const mod = event.ctrlKey || event.metaKey;
    if (mod && event.shiftKey && event.key.toLowerCase() === 'o') {
      event.preventDefault();
      document.querySelector('#new-session')?.click();
      return;
    }
    if (event.key !== 'Escape') return;
    if (press('#confirm-edit #cancel-edit')) return;
    if (target && target.closest('dialog, [role="dialog"], [aria-modal="true"]')) return;
    if (press('#stop-turn')) event.preventDefault();
  }, true);
}"""

# A phone's sidebar starts closed. Gradio opens it as it draws the page, and its toggle
# may not answer clicks yet; until a click has closed it (tried each frame, from the
# first, and seen closed on two frames), it is hidden and does not slide, so it never
# shows. Then it is the reader's. A head script, so it watches the page from before
# Gradio draws it; it gives up after 5 s whatever happened, so nothing stays hidden.
NARROW_SIDEBAR = """<style>
html.sidebar-closing #chats.sidebar { visibility: hidden; transition: none !important; }
</style>
<script>
(() => {
  if (window.innerWidth >= NARROW) return;
  const page = document.documentElement;
  page.classList.add('sidebar-closing');
  const done = () => page.classList.remove('sidebar-closing');
  setTimeout(done, 5000);
  let clicked = false, shut = 0;  // a click sent; frames seen closed since
  const close = () => {
    const side = document.querySelector('#chats.sidebar');
    if (side?.classList.contains('open')) {
      side.querySelector(':scope > .toggle-button')?.click();
      clicked = true;
      shut = 0;
    } else if (clicked && ++shut >= 2) {
      return done();
    }
    if (page.classList.contains('sidebar-closing')) requestAnimationFrame(close);
  };
  requestAnimationFrame(close);
})();
</script>""".replace("NARROW", str(NARROW))

# After an edit is saved, its confirmation's Send takes the focus: Enter sends, Esc cancels.
FOCUS_RESEND = """() => {
  setTimeout(() => document.querySelector('#confirm-edit #resend-edit')?.focus(), 50);
}"""
