"""Long, realistic chat histories with annotated questions: the recall bench we own.

``generate(language, size=..., seed=...)`` builds one person's history, deterministic from
the seed, in English (the user is Clara) or Indonesian (Rina; written as Indonesians
chat, not translated word by word). A history is chats with titles, spread over six
months, of user and assistant turns alternating: mostly small talk and filler reusing
common words, with facts woven in (``FACTS``: the user's news and the assistant's advice)
and people introduced in one chat and heard of again, by name only, in a later one
(``LINKS``). Every question names the turns that answer it (``Question.evidence``: indices
into ``History.turns``), in five categories:

- single-hop: the fact asked in its own words;
- multi-hop: who someone is (one chat) and what they did (another);
- temporal: "when did I …" and "what did I do the week after …";
- paraphrase: no content word of the question, stemmed, starts or is started by one of
  its evidence (``shares_no_word``; "what is my cat scared of" vs "Mochi hides … vacuum");
- third-person: the single-hop question naming the user (the profile's ``name``).

Some facts are the assistant's turns ("which book did you recommend …"). Sizes: ``small``
(4 chats, a few questions: the smoke test), ``full`` (24 chats, 500+ turns, 40+ questions
per category) and ``long`` (96 chats, 2,000+ turns, the same questions).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from memory.rules.text import content_words, stem

Category = Literal["single-hop", "multi-hop", "temporal", "paraphrase", "third-person"]
CATEGORIES: tuple[Category, ...] = (
    "single-hop",
    "multi-hop",
    "temporal",
    "paraphrase",
    "third-person",
)
Speaker = Literal["user", "assistant"]
Language = Literal["en", "id"]
LANGUAGES: tuple[Language, ...] = ("en", "id")
NOW = datetime(2026, 11, 25, 9, 30, tzinfo=UTC)  # questions are asked then (a Wednesday)
FIRST_DAY = datetime(2026, 5, 18, tzinfo=UTC)
SPAN = timedelta(days=184)  # the chats' days: FIRST_DAY .. about a week before NOW
WEEK_AFTER = (timedelta(days=5), timedelta(days=11))  # "the week after" a day, as a window
TAILED = 0.4  # the share of small talk that goes on with a stock tail ("Anyway.")
MIN_PREFIX = 4  # shares_no_word: shorter words are not compared as prefixes


@dataclass(frozen=True)
class Size:
    """How long a history is: chats, turns per chat (at least), facts and links woven in."""

    chats: int
    turns_per_chat: int
    facts: int
    links: int


SIZES = {
    "small": Size(chats=4, turns_per_chat=10, facts=6, links=3),
    "full": Size(chats=24, turns_per_chat=22, facts=42, links=40),
    "long": Size(chats=96, turns_per_chat=22, facts=42, links=40),
}


@dataclass(frozen=True)
class Turn:
    """One message of the history: who said it, what, when, and in which chat."""

    speaker: Speaker
    text: str
    at: datetime
    chat: int  # index into History.chats


@dataclass(frozen=True)
class Chat:
    """One session: its title and when it started."""

    title: str
    start: datetime


@dataclass(frozen=True)
class Question:
    """A question to recall and the turns that answer it (indices into History.turns)."""

    category: Category
    text: str
    evidence: tuple[int, ...]


@dataclass(frozen=True)
class History:
    """One person's chats, turns and annotated questions, in one language."""

    language: Language
    name: str  # the user's name, as their profile holds it
    chats: tuple[Chat, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    now: datetime  # when the questions are asked: after every turn


@dataclass(frozen=True)
class Fact:
    """Something said once that questions come back to.

    In ``ask``, ``other`` and ``when``, ``{I}``, ``{my}`` and ``{me}`` name the user: as
    themselves in a first-person question, by name in a third-person one. ``event`` is
    what they did, completing "the week after …" (empty for a state or advice). ``lead``
    is the user's turn an assistant's fact answers (empty: the user says the fact).
    """

    topic: str  # the chat's title when the fact opens it
    said: str
    ask: str  # single-hop; shares words with ``said``
    other: str  # paraphrase; shares no content word with ``said``
    when: str  # temporal
    event: str = ""
    lead: str = ""


@dataclass(frozen=True)
class Voice:
    """How one language says the generator's fixed sentences."""

    name: str
    pronouns: dict[str, tuple[str, str, str]]  # placeholder: (first person, named, later)
    week_after: str  # a question, {event}
    intros: tuple[str, ...]  # {rel} {Rel} {who}
    details: tuple[tuple[str, str, tuple[str, ...]], ...]  # (said, question, values)
    relations: tuple[str, ...]
    names: tuple[str, ...]
    mine: str  # a relation as "my …": {rel}
    user_filler: tuple[str, ...]  # {food} {place} {show}
    assistant_filler: tuple[str, ...]
    acks: tuple[str, ...]  # the assistant's reply to the user's news
    thanks: tuple[str, ...]  # the user's reply to the assistant's advice
    welcome: tuple[str, ...]
    titles: tuple[str, ...]  # a chat's title when no fact opens it
    user_tails: tuple[str, ...]  # what small talk may end with
    assistant_tails: tuple[str, ...]
    foods: tuple[str, ...]
    places: tuple[str, ...]
    shows: tuple[str, ...]


EN_FACTS = (
    Fact(
        "Mochi and the vacuum",
        "Mochi hides under the bed whenever I run the vacuum cleaner.",
        "Where does Mochi hide during {my} vacuuming?",
        "What is my cat scared of?",
        "When did {I} tell you Mochi is afraid of the vacuum?",
    ),
    Fact(
        "Bike repair",
        "I finally fixed the rear wheel of my bike, the spokes were bent.",
        "What did {I} fix on {my} bike?",
        "Which bicycle part did I mend?",
        "When did {I} fix the bike wheel?",
        "fixing the bike",
    ),
    Fact(
        "Sister's wedding",
        "My sister Lena is getting married in Lisbon next spring.",
        "Where is {my} sister Lena getting married?",
        "In which city will my sibling have her wedding?",
        "When did {I} tell you about Lena's wedding?",
    ),
    Fact(
        "Book for the flight",
        "Try Project Hail Mary by Andy Weir, it is funny and hard to put down.",
        "Which book by Andy Weir did you recommend to {me}?",
        "What novel did you suggest I take on the plane?",
        "When did you recommend Project Hail Mary to {me}?",
        lead="Can you suggest something to read on my flight to Tokyo?",
    ),
    Fact(
        "Pottery class",
        "I signed up for a pottery class on Tuesday evenings at the community centre.",
        "What class did {I} sign up for?",
        "Which hobby involving clay and a wheel did I start?",
        "When did {I} sign up for pottery?",
        "signing up for pottery",
    ),
    Fact(
        "Dentist",
        "The dentist said I need a crown on my upper left molar.",
        "What did the dentist say {I} need?",
        "What treatment does my tooth require?",
        "When did {I} see the dentist about the molar?",
        "the dentist visit",
    ),
    Fact(
        "New job",
        "I accepted the offer from Brightline, I start as a senior UX designer in August.",
        "Which company's offer did {I} accept?",
        "Where will I be working after the summer?",
        "When did {I} accept the Brightline offer?",
        "accepting the new job",
    ),
    Fact(
        "Allergy",
        "Turns out I'm allergic to cashews, my throat got itchy at the party.",
        "Which nut gave {me} an allergic reaction?",
        "What food should I avoid for health reasons?",
        "When did {I} find out about the cashew allergy?",
        "the cashew reaction",
    ),
    Fact(
        "Marathon training",
        "I ran 18 kilometres along the river this morning, my longest run so far.",
        "How far did {I} run along the river?",
        "What distance did I cover on my biggest jog yet?",
        "When did {I} run 18 kilometres?",
        "the 18 km run",
    ),
    Fact(
        "Rent",
        "The landlord is raising the rent by 200 euros from October.",
        "How much is the landlord raising {my} rent?",
        "How much more will my flat cost each month?",
        "When did {I} hear about the rent increase?",
    ),
    Fact(
        "Grandma's recipe",
        "I baked grandma's apple strudel and it came out perfectly flaky.",
        "What did {I} bake from grandma's recipe?",
        "Which pastry of my granny's did I make?",
        "When did {I} bake the apple strudel?",
        "baking the strudel",
    ),
    Fact(
        "Sleep",
        "Keep the bedroom cool, skip caffeine after 2 pm and try writing your worries "
        "down before bed.",
        "What did you say about caffeine and {my} bedroom?",
        "How did you propose I fix my insomnia?",
        "When did you give {me} tips about caffeine and sleep?",
        lead="I keep waking up at 3 am and can't fall back asleep.",
    ),
    Fact(
        "Selling the car",
        "I sold the old Honda Civic to a student for 4,000 euros.",
        "Who did {I} sell the Honda Civic to?",
        "Which vehicle did I get rid of, and to whom?",
        "When did {I} sell the Honda?",
        "selling the car",
    ),
    Fact(
        "Balcony garden",
        "The tomatoes on the balcony finally turned red, I picked a whole bowl.",
        "What did {I} pick on the balcony?",
        "Which vegetables from my terrace are ripe?",
        "When did {I} pick the balcony tomatoes?",
        "picking the tomatoes",
    ),
    Fact(
        "Concert",
        "Saw Arctic Monkeys live at the stadium, my ears are still ringing.",
        "Which band did {I} see at the stadium?",
        "What gig did I go to?",
        "When did {I} see Arctic Monkeys?",
        "the Arctic Monkeys concert",
    ),
    Fact(
        "Knee",
        "My physio thinks the knee pain comes from weak hip muscles.",
        "What does the physio think causes {my} knee pain?",
        "Why does my leg hurt, according to the therapist?",
        "When did {I} talk to the physio about {my} knee?",
        "the physio appointment",
    ),
    Fact(
        "Dad's birthday",
        "For Dad's 65th I booked a sunset dinner cruise on the harbour.",
        "What did {I} book for Dad's 65th?",
        "How are we celebrating my father's birthday?",
        "When did {I} book the dinner cruise?",
        "booking the cruise",
    ),
    Fact(
        "Spanish",
        "Use Duolingo for ten minutes each morning and watch La Casa de Papel with "
        "Spanish subtitles.",
        "Which show did you say to watch for {my} Spanish?",
        "How did you propose I improve at the language?",
        "When did you give {me} Spanish study tips?",
        lead="What's a good way to practise Spanish every day?",
    ),
    Fact(
        "Laptop",
        "Spilled coffee on my laptop keyboard, the repair shop wants 300 euros.",
        "What happened to {my} laptop keyboard?",
        "Why is my computer broken?",
        "When did {I} spill coffee on the laptop?",
        "the coffee spill",
    ),
    Fact(
        "Porto",
        "We spent the weekend in Porto and ate francesinha twice.",
        "What did {I} eat in Porto?",
        "Which sandwich did we have on our short getaway to Portugal?",
        "When did {I} go to Porto?",
        "the Porto trip",
    ),
    Fact(
        "Noise upstairs",
        "Someone upstairs has been drilling every Sunday at 8 am.",
        "Who has been drilling above {my} flat?",
        "What racket disturbs my sleep?",
        "When did {I} complain about the drilling?",
    ),
    Fact(
        "Vegetarian month",
        "I've gone vegetarian for a month to see how I feel.",
        "How long did {I} go vegetarian for?",
        "Am I eating meat these days?",
        "When did {I} go vegetarian?",
        "going vegetarian",
    ),
    Fact(
        "Gift ideas",
        "A beginner Lego Technic set or a kids' telescope would both be great at that age.",
        "Which Lego or telescope did you suggest for {my} godson?",
        "What present did you propose for the boy turning ten?",
        "When did you suggest the Lego set to {me}?",
        lead="Any ideas for my godson's 10th birthday?",
    ),
    Fact(
        "Swimming",
        "I swam 40 lengths at the public pool before work.",
        "How many lengths did {I} swim at the pool?",
        "How many laps did I do in the water?",
        "When did {I} swim 40 lengths?",
        "the long swim",
    ),
    Fact(
        "New camera",
        "Bought a second-hand Fujifilm X100V, the colours straight out of the camera are lovely.",
        "Which camera did {I} buy second-hand?",
        "What new photo gear do I own?",
        "When did {I} buy the Fujifilm?",
        "buying the camera",
    ),
    Fact(
        "Mum's surgery",
        "Mum's hip replacement went well, she's walking with a frame already.",
        "How did {my} mum's hip replacement go?",
        "Is my mother recovering after the operation?",
        "When did {my} mum have her hip replaced?",
        "Mum's operation",
    ),
    Fact(
        "Team offsite",
        "Our team offsite is in a cabin near Sintra, I'm in charge of the games.",
        "What is {my} job at the team offsite?",
        "What am I organising for the company retreat?",
        "When did {I} mention the offsite in Sintra?",
    ),
    Fact(
        "Lost phone",
        "Dropped my phone in the canal, it's gone for good.",
        "Where did {I} drop {my} phone?",
        "How did I lose my mobile?",
        "When did {I} drop the phone in the canal?",
        "losing the phone",
    ),
    Fact(
        "Budget",
        "A simple rule is 50/30/20: half on needs, 30 percent on wants and 20 percent "
        "into savings.",
        "What percentage rule did you give {me} for savings?",
        "How did you tell me to divide my pay?",
        "When did you explain the 50/30/20 rule to {me}?",
        lead="How should I split my salary each month?",
    ),
    Fact(
        "Bouldering",
        "First time bouldering today, I managed a V2 on the overhang wall.",
        "Which grade did {I} manage at bouldering?",
        "What level did I reach at the climbing gym?",
        "When did {I} first go bouldering?",
        "the first bouldering session",
    ),
    Fact(
        "Decaf",
        "Switched to decaf after lunch because my heart was racing at night.",
        "Why did {I} switch to decaf?",
        "What change did I make to my drinks?",
        "When did {I} switch to decaf?",
        "switching to decaf",
    ),
    Fact(
        "Flat hunting",
        "Viewed a two-bedroom near Campo de Ourique with a tiny garden, I loved it.",
        "What did {I} love about the two-bedroom {I} viewed?",
        "Which apartment with outdoor space caught my eye?",
        "When did {I} view the flat with the garden?",
        "the flat viewing",
    ),
    Fact(
        "Driving test",
        "Passed my driving test on the second try, only two minor faults.",
        "How many faults did {I} get on the driving test?",
        "Did I get my licence, and how many errors were there?",
        "When did {I} pass the driving test?",
        "passing the driving test",
    ),
    Fact(
        "Film night",
        "Watched Past Lives with Tom, I cried at the ending.",
        "Which film did {I} watch with Tom?",
        "What movie made me emotional?",
        "When did {I} watch Past Lives?",
        "movie night with Tom",
    ),
    Fact(
        "Kyoto plans",
        "Go to Fushimi Inari at dawn, then Arashiyama's bamboo grove, and end with dinner in Gion.",
        "Where did you tell {me} to go at dawn?",
        "Which sights did you propose for our Japan visit?",
        "When did you plan the Kyoto days with {me}?",
        lead="What should we see in Kyoto if we only have two days?",
    ),
    Fact(
        "Volunteering",
        "Started volunteering at the food bank on Saturday mornings.",
        "Where did {I} start volunteering?",
        "What charity work do I do at the weekend?",
        "When did {I} start at the food bank?",
        "starting at the food bank",
    ),
    Fact(
        "AirPods",
        "Lost my AirPods on the 28 tram, reported it but no luck.",
        "What did {I} lose on the tram?",
        "Where did my wireless earbuds go missing?",
        "When did {I} lose the AirPods?",
        "losing the AirPods",
    ),
    Fact(
        "Thai cooking class",
        "At the Thai cooking class I learned to make green curry paste from scratch.",
        "What did {I} learn at the Thai cooking class?",
        "Which Southeast Asian dish can I now prepare myself?",
        "When did {I} take the Thai cooking class?",
        "the Thai cooking class",
    ),
    Fact(
        "Insurance",
        "The insurer finally paid out for the water damage in the bathroom.",
        "What did the insurer pay {me} for?",
        "Did I get compensation for the leak?",
        "When did the insurer pay {me} for the water damage?",
        "the insurance payout",
    ),
    Fact(
        "Monstera",
        "Yellow leaves usually mean overwatering: let the top five centimetres of soil "
        "dry out first.",
        "What did you say about {my} monstera's yellow leaves?",
        "Why is my plant dying, according to you?",
        "When did you tell {me} about overwatering?",
        lead="My monstera has yellow leaves, what am I doing wrong?",
    ),
    Fact(
        "Anniversary",
        "Tom surprised me with a weekend at a vineyard in the Douro valley for our anniversary.",
        "Where did Tom take {me} for the anniversary?",
        "What romantic getaway did my partner plan?",
        "When did Tom take {me} to the Douro?",
        "the Douro weekend",
    ),
    Fact(
        "Haircut",
        "Cut my hair into a short bob, it feels so light.",
        "How did {I} cut {my} hair?",
        "What does my head look like after the salon?",
        "When did {I} cut {my} hair short?",
        "the haircut",
    ),
)

ID_FACTS = (
    Fact(
        "Mochi takut vacuum",
        "Mochi langsung ngumpet di kolong kasur tiap kali aku nyalain penyedot debu.",
        "Mochi ngumpet di mana kalau {I} nyalain penyedot debu?",
        "Kucingku takut sama apa?",
        "Kapan {I} cerita soal Mochi yang takut penyedot debu?",
    ),
    Fact(
        "Servis sepeda",
        "Akhirnya aku perbaiki roda belakang sepeda, jari-jarinya sempat bengkok.",
        "Bagian sepeda mana yang {I} perbaiki?",
        "Apa yang dibenerin dari alat gowesku?",
        "Kapan {I} perbaiki roda sepeda?",
        "memperbaiki sepeda",
    ),
    Fact(
        "Nikahan adik",
        "Adikku Sinta mau menikah di Makassar bulan April tahun depan.",
        "Sinta, adik{my}, mau menikah di mana?",
        "Saudara perempuanku bakal kawin di kota apa?",
        "Kapan {I} cerita soal pernikahan Sinta?",
    ),
    Fact(
        "Bacaan di pesawat",
        "Coba Laut Bercerita karya Leila S. Chudori, ceritanya kuat dan susah berhenti membacanya.",
        "Karya siapa yang kamu sarankan buat {me} baca?",
        "Novel apa yang kamu usulkan untuk kubawa naik pesawat?",
        "Kapan kamu merekomendasikan Laut Bercerita ke {me}?",
        lead="Ada saran bacaan buat penerbangan ke Tokyo?",
    ),
    Fact(
        "Kelas keramik",
        "Aku daftar kelas keramik tiap Selasa malam di balai warga.",
        "{I} daftar kelas apa?",
        "Hobi apa yang pakai tanah liat dan roda putar?",
        "Kapan {I} daftar kelas keramik?",
        "daftar kelas keramik",
    ),
    Fact(
        "Ke dokter gigi",
        "Kata dokter gigi, geraham kiri atasku harus dipasang mahkota.",
        "Dokter gigi bilang apa soal geraham{my}?",
        "Perawatan apa yang perlu dilakukan pada mulutku?",
        "Kapan {I} ke dokter gigi soal geraham?",
        "periksa ke dokter gigi",
    ),
    Fact(
        "Kerja baru",
        "Aku terima tawaran dari Tokopedia, mulai Agustus jadi senior UX designer.",
        "Tawaran dari perusahaan mana yang {I} terima?",
        "Nanti aku berkarier di kantor mana?",
        "Kapan {I} terima tawaran Tokopedia?",
        "menerima kerja baru",
    ),
    Fact(
        "Alergi",
        "Ternyata aku alergi kacang mete, tenggorokanku gatal waktu di pesta.",
        "{I} alergi kacang apa?",
        "Makanan apa yang sebaiknya kuhindari demi kesehatan?",
        "Kapan {I} tahu alergi kacang mete?",
        "reaksi alergi mete",
    ),
    Fact(
        "Latihan maraton",
        "Pagi ini aku lari 18 kilometer menyusuri sungai, rekor terjauhku.",
        "Berapa kilometer {I} lari menyusuri sungai?",
        "Sejauh apa jogging paling panjang yang pernah kutempuh?",
        "Kapan {I} lari 18 kilometer?",
        "lari 18 kilometer",
    ),
    Fact(
        "Sewa naik",
        "Pemilik kontrakan menaikkan sewa 500 ribu mulai Oktober.",
        "Berapa pemilik kontrakan menaikkan sewa{my}?",
        "Biaya tempat tinggalku nambah berapa per bulan?",
        "Kapan {I} dengar soal kenaikan sewa?",
    ),
    Fact(
        "Resep nenek",
        "Aku bikin kue lapis legit resep nenek, lapisannya rapi banget.",
        "Kue apa yang {I} bikin dari resep nenek?",
        "Jajanan warisan eyang yang kubuat apa?",
        "Kapan {I} bikin lapis legit?",
        "bikin lapis legit",
    ),
    Fact(
        "Susah tidur",
        "Jaga kamar tetap sejuk, hindari kopi setelah jam 2 siang, dan coba tulis "
        "kekhawatiranmu sebelum berbaring.",
        "Apa saran kamu soal kopi dan kamar tidur {me}?",
        "Bagaimana caramu menyuruhku mengatasi insomnia?",
        "Kapan kamu kasih {me} tips soal kopi dan tidur?",
        lead="Aku sering kebangun jam 3 pagi dan nggak bisa tidur lagi.",
    ),
    Fact(
        "Jual mobil",
        "Avanza lama sudah kujual ke mahasiswa seharga 90 juta.",
        "Avanza lama {I} jual ke siapa?",
        "Kendaraan mana yang kulepas, dan ke siapa?",
        "Kapan {I} jual Avanza?",
        "jual mobil",
    ),
    Fact(
        "Kebun balkon",
        "Tomat di balkon akhirnya merah, aku petik semangkuk penuh.",
        "{I} petik apa di balkon?",
        "Sayuran apa di teras rumahku yang sudah matang?",
        "Kapan {I} petik tomat di balkon?",
        "panen tomat",
    ),
    Fact(
        "Konser",
        "Nonton Sheila on 7 langsung di stadion, telingaku masih berdenging.",
        "Band apa yang {I} tonton di stadion?",
        "Aku pergi ke gig siapa?",
        "Kapan {I} nonton Sheila on 7?",
        "konser Sheila on 7",
    ),
    Fact(
        "Lutut",
        "Fisioterapisku bilang nyeri lutut ini gara-gara otot pinggul lemah.",
        "Menurut fisioterapis, nyeri lutut{my} karena apa?",
        "Kenapa kakiku sakit, kata terapisnya?",
        "Kapan {I} konsultasi ke fisioterapis soal lutut?",
        "konsultasi fisioterapi",
    ),
    Fact(
        "Ulang tahun Bapak",
        "Buat ulang tahun Bapak yang ke-65 aku pesan makan malam di kapal pesiar saat senja.",
        "{I} pesan apa buat ulang tahun Bapak ke-65?",
        "Gimana kami merayakan hari jadi ayahku?",
        "Kapan {I} pesan makan malam di kapal?",
        "pesan kapal pesiar",
    ),
    Fact(
        "Belajar bahasa Jepang",
        "Pakai Duolingo sepuluh menit tiap pagi dan tonton anime dengan subtitle Jepang.",
        "Apa saran kamu soal Duolingo dan anime buat {me}?",
        "Bagaimana usulmu agar kemampuan berbahasaku meningkat?",
        "Kapan kamu kasih {me} tips belajar bahasa Jepang?",
        lead="Gimana cara latihan bahasa Jepang tiap hari?",
    ),
    Fact(
        "Laptop ketumpahan",
        "Kopi tumpah ke keyboard laptopku, tukang servis minta 2 juta.",
        "Apa yang terjadi sama keyboard laptop{my}?",
        "Kenapa komputerku rusak?",
        "Kapan kopi tumpah ke laptop{my}?",
        "laptop ketumpahan kopi",
    ),
    Fact(
        "Liburan ke Yogya",
        "Akhir pekan kemarin kami di Yogyakarta dan makan gudeg dua kali.",
        "{I} makan apa di Yogyakarta?",
        "Hidangan apa yang kami santap waktu pelesir singkat ke Jawa?",
        "Kapan {I} ke Yogyakarta?",
        "liburan ke Yogyakarta",
    ),
    Fact(
        "Berisik",
        "Ada yang ngebor di lantai atas tiap Minggu jam 8 pagi.",
        "Apa yang bikin {me} kesal di lantai atas?",
        "Keributan apa yang mengganggu istirahatku?",
        "Kapan {I} mengeluh soal suara bor?",
    ),
    Fact(
        "Jadi vegetarian",
        "Sebulan ini aku coba jadi vegetarian, mau lihat efeknya ke badan.",
        "Pola makan apa yang {I} coba sebulan ini?",
        "Aku masih makan daging nggak sekarang?",
        "Kapan {I} mulai jadi vegetarian?",
        "mulai vegetarian",
    ),
    Fact(
        "Kado ulang tahun",
        "Set Lego Technic untuk pemula atau teleskop anak-anak dua-duanya cocok di umur segitu.",
        "Kamu sarankan Lego atau teleskop buat anak sahabat{my}?",
        "Hadiah apa yang kamu usulkan buat bocah yang genap sepuluh tahun?",
        "Kapan kamu sarankan Lego ke {me}?",
        lead="Ada ide kado buat ulang tahun anak sahabatku yang ke-10?",
    ),
    Fact(
        "Berenang",
        "Aku berenang 40 putaran di kolam umum sebelum kerja.",
        "Berapa putaran {I} berenang di kolam?",
        "Sejauh apa aku berolahraga di air?",
        "Kapan {I} berenang 40 putaran?",
        "berenang 40 putaran",
    ),
    Fact(
        "Kamera baru",
        "Beli Fujifilm X100V bekas, warna langsung dari kameranya cakep.",
        "Kamera bekas apa yang {I} beli?",
        "Alat foto baru apa yang kupunya?",
        "Kapan {I} beli Fujifilm?",
        "beli kamera",
    ),
    Fact(
        "Operasi Ibu",
        "Operasi ganti pinggul Ibu lancar, sekarang sudah jalan pakai walker.",
        "Gimana operasi pinggul ibu{my}?",
        "Mamaku sudah pulih setelah dibedah?",
        "Kapan ibu{my} dioperasi pinggulnya?",
        "operasi Ibu",
    ),
    Fact(
        "Outing kantor",
        "Outing tim kami di vila dekat Lembang, aku yang pegang acara games.",
        "Di outing tim, {I} pegang bagian apa?",
        "Aku mengurus apa untuk retret perusahaan?",
        "Kapan {I} cerita soal outing di Lembang?",
    ),
    Fact(
        "HP kecebur",
        "HP-ku jatuh ke selokan, sudah hilang.",
        "HP {I} jatuh ke mana?",
        "Gimana ceritanya ponselku lenyap?",
        "Kapan HP {I} jatuh ke selokan?",
        "kehilangan HP",
    ),
    Fact(
        "Atur gaji",
        "Aturan sederhananya 50/30/20: separuh untuk kebutuhan, 30 persen untuk keinginan, "
        "20 persen ditabung.",
        "Aturan persen apa yang kamu kasih ke {me} untuk menabung?",
        "Penghasilanku sebaiknya dialokasikan gimana menurutmu?",
        "Kapan kamu jelaskan aturan 50/30/20 ke {me}?",
        lead="Gimana sebaiknya aku bagi gaji tiap bulan?",
    ),
    Fact(
        "Bouldering",
        "Pertama kali bouldering, aku berhasil naik jalur V2 di dinding overhang.",
        "Jalur apa yang berhasil {I} naiki waktu bouldering?",
        "Sampai tingkat apa aku bisa memanjat di gym panjat?",
        "Kapan {I} pertama kali bouldering?",
        "pertama kali bouldering",
    ),
    Fact(
        "Kopi decaf",
        "Aku ganti ke kopi decaf habis makan siang karena jantungku berdebar malam-malam.",
        "Kenapa {I} ganti ke decaf?",
        "Minuman soreku berubah jadi apa?",
        "Kapan {I} ganti ke decaf?",
        "ganti ke decaf",
    ),
    Fact(
        "Cari rumah",
        "Lihat rumah dua kamar di Dago yang ada taman kecilnya, aku suka banget.",
        "{I} suka rumah dua kamar di mana?",
        "Hunian berhalaman mana yang bikin aku kepincut?",
        "Kapan {I} lihat rumah di Dago?",
        "lihat rumah di Dago",
    ),
    Fact(
        "Ujian SIM",
        "Lulus ujian SIM di percobaan kedua, cuma dua kesalahan kecil.",
        "Berapa kesalahan {I} waktu ujian SIM?",
        "Aku sudah punya lisensi nyetir belum?",
        "Kapan {I} lulus ujian SIM?",
        "lulus ujian SIM",
    ),
    Fact(
        "Nonton film",
        "Nonton Past Lives bareng Dimas, aku nangis di bagian akhirnya.",
        "Film apa yang {I} nonton bareng Dimas?",
        "Sinema apa yang bikin aku terharu?",
        "Kapan {I} nonton Past Lives?",
        "nonton film bareng Dimas",
    ),
    Fact(
        "Rencana ke Kyoto",
        "Ke Fushimi Inari waktu subuh, lalu hutan bambu Arashiyama, dan tutup dengan "
        "makan malam di Gion.",
        "Kamu suruh {me} ke mana waktu subuh?",
        "Tempat wisata apa yang kamu usulkan buat kunjungan kami ke Jepang?",
        "Kapan kamu susun rencana Kyoto bareng {me}?",
        lead="Kalau cuma dua hari di Kyoto, kami sebaiknya ke mana?",
    ),
    Fact(
        "Relawan",
        "Mulai jadi relawan di bank makanan tiap Sabtu pagi.",
        "{I} jadi relawan di mana?",
        "Kegiatan sosial apa yang kulakukan di akhir pekan?",
        "Kapan {I} mulai jadi relawan?",
        "mulai jadi relawan",
    ),
    Fact(
        "AirPods hilang",
        "AirPods-ku ketinggalan di KRL, sudah lapor tapi nggak ketemu.",
        "Apa yang {I} tinggalkan di KRL?",
        "Earbuds nirkabelku raib di mana?",
        "Kapan AirPods {I} ketinggalan?",
        "kehilangan AirPods",
    ),
    Fact(
        "Kelas masak Thai",
        "Di kelas masak Thailand aku belajar bikin bumbu kari hijau dari nol.",
        "{I} belajar apa di kelas masak Thailand?",
        "Hidangan Asia Tenggara apa yang sekarang bisa kuolah sendiri?",
        "Kapan {I} ikut kelas masak Thailand?",
        "kelas masak Thailand",
    ),
    Fact(
        "Klaim asuransi",
        "Asuransi akhirnya cair untuk kerusakan air di kamar mandi.",
        "Klaim asuransi {I} cair untuk apa?",
        "Aku dapat ganti rugi atas kebocoran itu?",
        "Kapan asuransi {I} cair?",
        "klaim asuransi cair",
    ),
    Fact(
        "Tanaman hias",
        "Daun menguning biasanya tanda kebanyakan disiram: biarkan lima senti media tanam "
        "bagian atas kering dulu.",
        "Apa katamu soal daun monstera{my} yang menguning?",
        "Kenapa pohon hiasku layu, menurutmu?",
        "Kapan kamu jelaskan soal kebanyakan disiram ke {me}?",
        lead="Daun monstera-ku menguning, aku salah apa ya?",
    ),
    Fact(
        "Anniversary",
        "Dimas kasih kejutan: akhir pekan di kebun teh Puncak untuk ulang tahun pernikahan kami.",
        "Dimas ajak {me} ke mana buat ulang tahun pernikahan?",
        "Liburan romantis apa yang direncanakan pasanganku?",
        "Kapan Dimas ajak {me} ke Puncak?",
        "akhir pekan di Puncak",
    ),
    Fact(
        "Potong rambut",
        "Potong rambut model bob pendek, rasanya ringan banget.",
        "{I} potong rambut model apa?",
        "Gaya tatanan kepalaku yang baru seperti apa?",
        "Kapan {I} potong rambut pendek?",
        "potong rambut",
    ),
)

# A near miss for each fact, said in another chat: it shares the single-hop question's
# words but not its answer (Mochi's glass, not the vacuum), as a long history does.
EN_NEAR = (
    "Mochi knocked a glass off the table again, she's such a menace.",
    "I might sell my bike, I hardly ride it since the rain started.",
    "Lena sent me photos of her new flat, it looks cosy.",
    "My colleague recommended a book about habits, I might get it.",
    "I almost signed up for a yoga class, then chickened out.",
    "The dentist's receptionist called to say I need to reschedule.",
    "Got another offer email from a recruiter, ignored it.",
    "My coworker had an allergic reaction to a bee sting at lunch.",
    "We walked along the river after dinner, so peaceful.",
    "The landlord finally fixed the heating.",
    "Grandma called, she wants the recipe for my banana bread.",
    "The bedroom is a mess, I need to sort my wardrobe.",
    "Saw a Honda Civic exactly like my old one today, felt nostalgic.",
    "I sat on the balcony with a book all afternoon.",
    "There's a football match at the stadium, the traffic is crazy.",
    "Booked another physio session, my shoulder is stiff now.",
    "Dad called, he's nervous about turning 65.",
    "My Spanish colleague taught me a few swear words, ha.",
    "My work laptop is so slow, IT says they'll replace it.",
    "A friend from Porto is visiting next month.",
    "The flat above mine has been empty for weeks.",
    "My sister has been vegetarian for years, she's a great cook.",
    "My godson is obsessed with dinosaurs right now.",
    "The pool was closed today for cleaning, annoying.",
    "My phone camera is cracked, the photos look foggy.",
    "Mum is making her famous soup this weekend.",
    "The team lunch got moved to Friday.",
    "My phone keeps dropping calls in the kitchen.",
    "I moved some savings into a fixed deposit.",
    "A new bouldering gym opened near the station.",
    "The café near work only has decaf on Mondays, weird.",
    "My friend loved the two-bedroom she rented last year.",
    "Driving in the rain still makes me nervous.",
    "Tom wants to watch a horror film this weekend, no thanks.",
    "I woke up at dawn for no reason today.",
    "A friend keeps asking me to start volunteering at the animal shelter.",
    "The tram was packed this morning, I couldn't breathe.",
    "I cooked Thai basil chicken for dinner, nowhere near as good as the restaurant.",
    "The insurer raised my premium again, outrageous.",
    "Bought a second monstera, the leaves are huge.",
    "Tom forgot to take the rubbish out again.",
    "My hair is a mess in this humidity.",
)
ID_NEAR = (
    "Mochi mecahin gelas lagi di meja, nakal banget.",
    "Sepeda lipat jarang kupakai sejak musim hujan.",
    "Sinta kirim foto rumah barunya, lucu banget.",
    "Teman kantor menyarankan buku tentang kebiasaan, karya penulis Amerika.",
    "Hampir saja aku daftar kelas yoga, tapi batal.",
    "Resepsionis dokter gigi telepon, jadwalku harus diundur.",
    "Dapat tawaran lagi dari perekrut, aku abaikan.",
    "Teman kantorku kena alergi sengatan lebah waktu makan siang.",
    "Habis makan malam kami jalan kaki menyusuri sungai, tenang banget.",
    "Pemilik kontrakan akhirnya benerin pemanas air.",
    "Nenek telepon, minta resep bolu pisangku.",
    "Kamar tidurku berantakan, lemari harus diberesin.",
    "Tadi lihat Avanza persis kayak punyaku dulu, jadi kangen.",
    "Sore ini aku duduk di balkon sambil baca buku.",
    "Ada pertandingan bola di stadion, macetnya parah.",
    "Fisioterapis bilang bahuku kaku karena kebanyakan duduk.",
    "Bapak telepon, katanya deg-degan mau umur 65.",
    "Adikku nonton anime terus tiap sore.",
    "Keyboard laptop kantor macet, IT janji mau ganti.",
    "Ada teman dari Yogyakarta mau main ke sini bulan depan.",
    "Lantai atas kosong sudah berminggu-minggu.",
    "Sebulan ini aku coba bangun lebih pagi.",
    "Anak sahabatku lagi tergila-gila sama dinosaurus.",
    "Kolam renangnya tutup hari ini buat dibersihkan, sebel.",
    "Kamera HP-ku retak, fotonya jadi buram.",
    "Operasi usus buntu teman kantorku lancar.",
    "Makan siang tim dipindah ke hari Jumat.",
    "HP aku sering putus sinyal di dapur.",
    "Bunga deposito cuma 3 persen, kecil banget.",
    "Gym bouldering baru buka dekat stasiun.",
    "Kafe dekat kantor cuma sedia decaf tiap Senin, aneh.",
    "Temanku suka banget rumah dua kamar yang dia sewa tahun lalu.",
    "Ujian kantor minggu depan bikin deg-degan.",
    "Dimas pengin nonton film horor akhir pekan ini, ogah ah.",
    "Tadi aku kebangun waktu subuh tanpa alasan.",
    "Temanku terus ngajak jadi relawan di penampungan hewan.",
    "KRL pagi ini penuh banget, sampai susah napas.",
    "Tadi masak ayam kemangi ala Thailand, jauh dari rasa restoran.",
    "Asuransi menaikkan premi lagi, keterlaluan.",
    "Beli monstera kedua, daun yang besar-besar bikin ruang tamu segar.",
    "Dimas lupa buang sampah lagi.",
    "Potong kuku kucing itu susah banget.",
)

EN = Voice(
    name="Clara",
    pronouns={
        "I": ("I", "Clara", "she"),
        "my": ("my", "Clara's", "her"),
        "me": ("me", "Clara", "her"),
    },
    week_after="What did I do the week after {event}?",
    intros=(
        "My {rel} {who} came over for coffee this afternoon.",
        "I bumped into my {rel}, {who}, at the supermarket.",
        "Had a long phone call with my {rel} {who} today.",
        "My {rel} {who} says hi, by the way.",
    ),
    details=(
        (
            "{who} just moved to {x} for a new job.",
            "Where did {mine} move to?",
            ("Rotterdam", "Valencia", "Nairobi", "Osaka", "Montreal"),
        ),
        (
            "{who} lent me {x} for the weekend.",
            "What did {mine} lend me?",
            (
                "a camping tent",
                "a cordless drill",
                "a pasta machine",
                "a pressure washer",
                "a big cooler box",
            ),
        ),
        (
            "{who} has started learning the {x}.",
            "Which instrument is {mine} learning?",
            ("cello", "saxophone", "ukulele", "violin", "drums"),
        ),
        (
            "{who} adopted a {x} from the shelter.",
            "What animal did {mine} adopt?",
            ("grey kitten", "three-legged dog", "pair of rabbits", "old beagle", "tabby cat"),
        ),
        (
            "{who} keeps telling me to watch {x}.",
            "Which show does {mine} want me to watch?",
            ("Slow Horses", "The Bear", "Severance", "Shogun", "Dark"),
        ),
        (
            "{who} got a job as a {x}.",
            "What job did {mine} get?",
            ("pharmacist", "pilot trainee", "park ranger", "sous chef", "bank teller"),
        ),
        (
            "{who} ran the {x} last weekend.",
            "Which race did {mine} run?",
            (
                "Lisbon half marathon",
                "Porto 10K",
                "city night run",
                "Berlin marathon",
                "trail race in Sintra",
            ),
        ),
        (
            "{who} is saving up for a {x}.",
            "What is {mine} saving for?",
            ("trip to Iceland", "new motorbike", "flat deposit", "sailing course", "vintage piano"),
        ),
    ),
    relations=(
        "cousin",
        "neighbour",
        "boss",
        "sister-in-law",
        "brother-in-law",
        "old classmate",
        "yoga teacher",
        "piano teacher",
        "younger brother",
        "best friend",
        "colleague from finance",
        "mother-in-law",
        "nephew",
        "niece",
        "uncle",
        "aunt",
        "grandmother",
        "barber",
        "driving instructor",
        "personal trainer",
        "college roommate",
        "mentor",
        "family doctor",
        "hairdresser",
        "book club friend",
        "running buddy",
        "tennis partner",
        "childhood friend",
        "former colleague",
        "new manager",
        "team lead",
        "godmother",
        "stepfather",
        "pen pal",
        "flatmate",
        "Spanish tutor",
        "accountant",
        "wedding photographer",
        "choir friend",
        "grandfather",
    ),
    names=(
        "Bayu",
        "Priya",
        "Marco",
        "Ingrid",
        "Tariq",
        "Sofia",
        "Hiroshi",
        "Amara",
        "Lukas",
        "Fatima",
        "Diego",
        "Hana",
        "Oskar",
        "Leila",
        "Mateo",
        "Yuki",
        "Nadia",
        "Felix",
        "Zara",
        "Emeka",
        "Greta",
        "Rafael",
        "Anya",
        "Kwame",
        "Elif",
        "Tobias",
        "Mei",
        "Joaquin",
        "Saanvi",
        "Henrik",
        "Chloe",
        "Dario",
        "Aiko",
        "Ruben",
        "Noor",
        "Stefan",
        "Imani",
        "Pavel",
        "Lucia",
        "Omar",
    ),
    mine="my {rel}",
    user_filler=(
        "Long day at work, I'm pretty tired.",
        "It's raining again, I think I'll stay in tonight.",
        "I made {food} for dinner, nothing fancy.",
        "Do you ever get the feeling the week goes by too fast?",
        "Just had my second coffee of the day.",
        "The bus was late again this morning.",
        "I'm thinking of cooking {food} this weekend.",
        "Work was fine, lots of meetings as usual.",
        "Can't decide what to watch tonight.",
        "We went for a walk in {place}, the weather was nice.",
        "I need to clean the kitchen but I have zero energy.",
        "My phone battery dies so quickly these days.",
        "I finished another episode of {show}.",
        "Traffic was terrible on the way home.",
        "Had {food} for lunch with the team.",
        "I should go to bed earlier, honestly.",
        "It was so hot today, I barely left the flat.",
        "Just got back from {place}.",
        "Feeling a bit lazy today.",
        "I keep forgetting to drink water.",
        "The weekend went by way too fast.",
        "Ordered {food} again, I know, I know.",
        "My inbox is a disaster right now.",
        "I tried a new coffee place near {place}.",
        "Nothing much happened today, to be honest.",
        "Do you have any tips for staying focused at work?",
        "I'm in a good mood today for no reason.",
        "Cleaned the whole flat, it feels so good.",
        "The kids next door were loud all afternoon.",
        "I might call my mum later.",
        "Work is slow this week, I'm not complaining.",
        "I want to cook something new but I'm out of ideas.",
    ),
    assistant_filler=(
        "That sounds like a long day. Be kind to yourself tonight.",
        "Nice! How did it turn out?",
        "Rainy evenings are perfect for staying in.",
        "Ha, that happens to everyone.",
        "Do you want to talk about it, or just vent?",
        "That sounds cosy.",
        "Good idea, a slow evening can help.",
        "How was the rest of your day?",
        "I'm glad you got some time for yourself.",
        "Honestly, that sounds lovely.",
        "Small wins count too.",
        "What are you in the mood for?",
        "Try to get some rest tonight.",
        "That's fair, some days are like that.",
        "Sounds like a nice way to spend the afternoon.",
        "Oh no, that's annoying.",
        "Tell me more, I'm curious.",
        "You deserve a quiet evening.",
        "Fair enough! Enjoy it.",
        "Was it worth it?",
    ),
    acks=(
        "Oh, really? How do you feel about that?",
        "That's big news, thanks for telling me.",
        "Noted! I'll keep that in mind.",
        "Wow, okay. How are you feeling about it?",
        "Good to know.",
        "Ha, I love that.",
    ),
    thanks=("Thanks, I'll try that.", "Great, noted.", "Oh, good idea, thank you."),
    welcome=("You're welcome!", "Happy to help.", "Any time. Let me know how it goes."),
    user_tails=(
        "Anyway.",
        "How about you?",
        "Ugh.",
        "Not much else to report.",
        "That's my life, haha.",
        "Just saying.",
        "Whatever, it's fine.",
        "Such is life.",
    ),
    assistant_tails=(
        "Anything else on your mind?",
        "I'm here if you want to chat.",
        "How's the rest of your week looking?",
        "Take it easy.",
        "Fingers crossed for tomorrow.",
        "That made me smile.",
    ),
    titles=(
        "Evening chat",
        "Rainy day",
        "Catching up",
        "Monday blues",
        "Quick hello",
        "Random thoughts",
        "Slow Sunday",
    ),
    foods=("pasta", "stir-fry", "tacos", "soup", "fried rice", "a curry", "omelettes", "a salad"),
    places=("the park", "the old town", "the riverside", "the mall", "the beach", "the market"),
    shows=("The Office", "that baking show", "the crime series", "the documentary series"),
)

ID = Voice(
    name="Rina",
    pronouns={
        "I": ("aku", "Rina", "dia"),
        "my": ("ku", " Rina", "nya"),
        "me": ("aku", "Rina", "dia"),
    },
    week_after="Aku ngapain seminggu setelah {event}?",
    intros=(
        "{Rel}ku, {who}, mampir ngopi sore ini.",
        "Tadi ketemu {rel}ku, {who}, di supermarket.",
        "Barusan telponan lama sama {rel}ku, {who}.",
        "Oh iya, {rel}ku {who} titip salam.",
    ),
    details=(
        (
            "{who} baru pindah ke {x} karena dapat kerjaan baru.",
            "{Mine} pindah ke mana?",
            ("Balikpapan", "Medan", "Semarang", "Manado", "Pontianak"),
        ),
        (
            "{who} minjemin aku {x} buat akhir pekan.",
            "{Mine} minjemin apa ke aku?",
            ("tenda kemah", "bor listrik", "mesin pasta", "semprotan air bertekanan", "cooler box"),
        ),
        (
            "{who} mulai belajar main {x}.",
            "{Mine} lagi belajar alat musik apa?",
            ("cello", "saksofon", "ukulele", "biola", "drum"),
        ),
        (
            "{who} mengadopsi {x} dari shelter.",
            "{Mine} mengadopsi hewan apa?",
            (
                "anak kucing abu-abu",
                "anjing berkaki tiga",
                "sepasang kelinci",
                "beagle tua",
                "kucing belang",
            ),
        ),
        (
            "{who} terus nyuruh aku nonton {x}.",
            "{Mine} nyuruh aku nonton apa?",
            ("Gadis Kretek", "Pengabdi Setan", "Tilik", "Home Sweet Loan", "Agak Laen"),
        ),
        (
            "{who} diterima kerja jadi {x}.",
            "{Mine} dapat kerja jadi apa?",
            ("apoteker", "calon pilot", "jagawana", "koki", "teller bank"),
        ),
        (
            "{who} ikut {x} minggu lalu.",
            "{Mine} ikut lomba lari apa?",
            (
                "Jakarta Half Marathon",
                "Bali 10K",
                "lari malam keliling kota",
                "Borobudur Marathon",
                "trail run di Bromo",
            ),
        ),
        (
            "{who} lagi nabung buat {x}.",
            "{Mine} lagi nabung buat apa?",
            ("jalan-jalan ke Islandia", "motor baru", "DP rumah", "kursus berlayar", "piano antik"),
        ),
    ),
    relations=(
        "sepupu",
        "tetangga",
        "bos",
        "kakak ipar",
        "adik ipar",
        "teman sekolah",
        "guru yoga",
        "guru piano",
        "adik laki-laki",
        "sahabat",
        "teman kantor",
        "ibu mertua",
        "keponakan",
        "om",
        "tante",
        "nenek",
        "tukang cukur",
        "instruktur nyetir",
        "pelatih gym",
        "teman sekamar",
        "mentor",
        "dokter keluarga",
        "penata rambut",
        "teman klub buku",
        "teman lari",
        "partner tenis",
        "teman kecil",
        "mantan rekan kerja",
        "manajer baru",
        "ketua tim",
        "budhe",
        "pakde",
        "sahabat pena",
        "teman serumah",
        "guru les",
        "akuntan",
        "fotografer langganan",
        "teman arisan",
        "penjahit langganan",
        "kakek",
    ),
    names=(
        "Bayu",
        "Putri",
        "Andi",
        "Sekar",
        "Fajar",
        "Wulan",
        "Reza",
        "Ayu",
        "Gilang",
        "Nadia",
        "Dewi",
        "Hendra",
        "Maya",
        "Rizky",
        "Intan",
        "Bima",
        "Laras",
        "Teguh",
        "Citra",
        "Arif",
        "Melati",
        "Galih",
        "Ratna",
        "Yusuf",
        "Kirana",
        "Dodi",
        "Sari",
        "Eko",
        "Nurul",
        "Wahyu",
        "Indah",
        "Joko",
        "Fitri",
        "Rudi",
        "Anisa",
        "Hadi",
        "Lestari",
        "Agus",
        "Tari",
        "Bagus",
    ),
    mine="{rel}ku",
    user_filler=(
        "Capek banget hari ini di kantor.",
        "Hujan lagi, kayaknya malam ini di rumah aja.",
        "Tadi masak {food} buat makan malam, biasa aja sih.",
        "Kok rasanya seminggu cepat banget ya.",
        "Barusan ngopi gelas kedua.",
        "Busnya telat lagi tadi pagi.",
        "Akhir pekan ini pengin masak {food}.",
        "Kerjaan lancar, rapat terus kayak biasa.",
        "Bingung mau nonton apa malam ini.",
        "Tadi jalan-jalan ke {place}, cuacanya enak.",
        "Dapur harus dibersihin tapi aku males banget.",
        "Baterai HP cepet banget habis sekarang.",
        "Baru selesai satu episode {show} lagi.",
        "Macet parah di jalan pulang.",
        "Makan siang {food} bareng tim.",
        "Harusnya aku tidur lebih awal.",
        "Panas banget hari ini, hampir nggak keluar rumah.",
        "Baru pulang dari {place}.",
        "Lagi mager hari ini.",
        "Aku sering lupa minum air.",
        "Akhir pekan lewat cepat banget.",
        "Pesan {food} lagi, iya aku tahu.",
        "Email kantor numpuk banget.",
        "Nyoba kedai kopi baru dekat {place}.",
        "Nggak ada yang spesial hari ini sih.",
        "Ada tips biar fokus kerja nggak?",
        "Entah kenapa hari ini mood-ku bagus.",
        "Beres-beres seluruh rumah, lega rasanya.",
        "Anak-anak sebelah berisik sepanjang sore.",
        "Nanti mungkin aku telepon ibu.",
        "Minggu ini kerjaan sepi, nggak ngeluh sih.",
        "Pengin masak yang baru tapi lagi nggak ada ide.",
    ),
    assistant_filler=(
        "Hari yang panjang ya. Malam ini santai dulu.",
        "Asyik! Hasilnya gimana?",
        "Malam hujan memang paling enak di rumah.",
        "Haha, semua orang pernah begitu.",
        "Mau cerita, atau cuma pengin curhat?",
        "Kedengarannya nyaman.",
        "Ide bagus, malam yang santai bisa membantu.",
        "Sisa harimu gimana?",
        "Senang kamu punya waktu buat diri sendiri.",
        "Jujur, kedengarannya menyenangkan.",
        "Kemenangan kecil juga dihitung.",
        "Lagi pengin apa?",
        "Coba istirahat yang cukup malam ini.",
        "Wajar, ada hari-hari kayak gitu.",
        "Cara yang asyik buat menghabiskan sore.",
        "Aduh, nyebelin ya.",
        "Ceritain dong, aku penasaran.",
        "Kamu pantas dapat malam yang tenang.",
        "Oke deh! Nikmati ya.",
        "Sepadan nggak?",
    ),
    acks=(
        "Oh ya? Perasaanmu gimana soal itu?",
        "Wah, kabar besar, makasih sudah cerita.",
        "Oke, aku catat ya.",
        "Wah. Kamu gimana rasanya?",
        "Baik, aku ingat.",
        "Haha, suka deh.",
    ),
    thanks=("Makasih, nanti aku coba.", "Oke, noted.", "Wah, ide bagus, makasih."),
    welcome=("Sama-sama!", "Senang bisa bantu.", "Kapan aja. Kabari ya hasilnya."),
    user_tails=(
        "Ya gitu deh.",
        "Kamu gimana?",
        "Huft.",
        "Nggak ada kabar lain sih.",
        "Hidupku ya begini, haha.",
        "Cuma mau cerita aja.",
        "Ya sudahlah.",
        "Namanya juga hidup.",
    ),
    assistant_tails=(
        "Ada lagi yang lagi kamu pikirin?",
        "Aku di sini kalau mau ngobrol.",
        "Sisa minggumu gimana?",
        "Santai aja ya.",
        "Semoga besok lebih baik.",
        "Aku jadi ikut senyum.",
    ),
    titles=(
        "Ngobrol malam",
        "Hari hujan",
        "Kabar terbaru",
        "Senin lagi",
        "Halo sebentar",
        "Pikiran acak",
        "Minggu santai",
    ),
    foods=("nasi goreng", "sop ayam", "mi goreng", "tumis kangkung", "soto", "pecel", "capcay"),
    places=("taman kota", "alun-alun", "pasar", "mal", "pantai", "Braga"),
    shows=("drakor itu", "acara masak", "serial detektif", "film dokumenter"),
)

VOICES = {"en": EN, "id": ID}
FACTS = {"en": EN_FACTS, "id": ID_FACTS}
NEAR = {"en": EN_NEAR, "id": ID_NEAR}


def stems(text: str) -> set[str]:
    """The stemmed content words of ``text`` (memory.rules.text's, as recall sees them)."""
    return {stem(word) for word in content_words(text)}


def shares_no_word(question: str, evidence: str) -> bool:
    """True when no stemmed content word of ``question`` equals, starts or is started by
    one of ``evidence`` ("kucingku" and "kucing" count as shared)."""
    asked, said = stems(question), stems(evidence)
    return not any(
        a == s or (min(len(a), len(s)) >= MIN_PREFIX and (a.startswith(s) or s.startswith(a)))
        for a in asked
        for s in said
    )


def render(template: str, voice: Voice, *, named: bool) -> str:
    """A question with the user as themselves, or (``named``) by name then pronoun."""
    text, seen = template, False
    while "{" in text:
        start = text.index("{")
        end = text.index("}", start)
        first, name, later = voice.pronouns[text[start + 1 : end]]
        word = first if not named else later if seen else name
        seen = True
        text = text[:start] + word + text[end + 1 :]
    return text[0].upper() + text[1:]


@dataclass(frozen=True)
class Line:
    """A turn before it has a time: who says it, what, and which fact or link it holds."""

    speaker: Speaker
    text: str
    key: str = ""  # "fact:3", "intro:5", "detail:5": what the questions point to


class Deck:
    """Lines drawn in a shuffled order, reshuffled when used up: no line says the same
    twice in a row, and every line comes round."""

    def __init__(self, rng: random.Random, lines: tuple[str, ...]) -> None:
        self.rng, self.lines, self.left = rng, lines, list[str]()

    def draw(self) -> str:
        if not self.left:
            self.left = list(self.lines)
            self.rng.shuffle(self.left)
        return self.left.pop()


class Phrases:
    """One history's stock lines, each drawn from its own deck: small talk (slots filled)
    and its replies, the assistant's acknowledgements, introductions, thanks."""

    def __init__(self, rng: random.Random, voice: Voice) -> None:
        self.rng, self.voice = rng, voice
        self.said, self.replies = Deck(rng, voice.user_filler), Deck(rng, voice.assistant_filler)
        self.acks, self.intros = Deck(rng, voice.acks), Deck(rng, voice.intros)
        self.thanks, self.welcome = Deck(rng, voice.thanks), Deck(rng, voice.welcome)

    def small_talk(self) -> list[Line]:
        voice, rng = self.voice, self.rng
        said = self.said.draw().format(
            food=rng.choice(voice.foods),
            place=rng.choice(voice.places),
            show=rng.choice(voice.shows),
        )
        reply = self.replies.draw()
        if rng.random() < TAILED:
            said = f"{said} {rng.choice(voice.user_tails)}"
        if rng.random() < TAILED:
            reply = f"{reply} {rng.choice(voice.assistant_tails)}"
        return [Line("user", said), Line("assistant", reply)]

    def fact(self, number: int, fact: Fact) -> list[Line]:
        """The user's news and an acknowledgement, or the user's ask and the advice."""
        key = f"fact:{number}"
        if not fact.lead:
            return [Line("user", fact.said, key), Line("assistant", self.acks.draw())]
        return [
            Line("user", fact.lead),
            Line("assistant", fact.said, key),
            Line("user", self.thanks.draw()),
            Line("assistant", self.welcome.draw()),
        ]

    def near(self, text: str) -> list[Line]:
        """A near miss and the assistant's reply."""
        return [Line("user", text), Line("assistant", self.replies.draw())]

    def link(self, number: int) -> tuple[list[Line], list[Line]]:
        """A person introduced (by relation and name), then heard of by name only."""
        voice = self.voice
        relation, who = voice.relations[number], voice.names[number]
        said, _, values = voice.details[number % len(voice.details)]
        value = values[(number // len(voice.details)) % len(values)]
        intro = self.intros.draw().format(rel=relation, Rel=_capital(relation), who=who)
        return (
            [Line("user", intro, f"intro:{number}"), Line("assistant", self.acks.draw())],
            [
                Line("user", said.format(who=who, x=value), f"detail:{number}"),
                Line("assistant", self.acks.draw()),
            ],
        )


def _capital(text: str) -> str:
    return text[0].upper() + text[1:]


def _link_question(voice: Voice, number: int) -> str:
    relation = voice.relations[number]
    _, question, _ = voice.details[number % len(voice.details)]
    mine = voice.mine.format(rel=relation)
    return question.format(mine=mine, Mine=_capital(mine))


def _units(
    rng: random.Random, phrases: Phrases, language: Language, size: Size
) -> list[list[list[Line]]]:
    """Each chat's units (a fact's, its near miss's or a link's lines): facts and
    introductions spread evenly over the chats in a seeded order, a fact's near miss in
    another chat, every link's two halves in different chats."""
    chats = size.chats
    units: list[list[list[Line]]] = [[] for _ in range(chats)]
    for slot, number in enumerate(rng.sample(range(size.facts), size.facts)):
        chat = slot * chats // size.facts
        units[chat].append(phrases.fact(number, FACTS[language][number]))
        elsewhere = (chat + rng.randrange(1, chats)) % chats
        units[elsewhere].append(phrases.near(NEAR[language][number]))
    gap = max(1, chats // 8)
    for slot, number in enumerate(rng.sample(range(size.links), size.links)):
        intro, detail = phrases.link(number)
        first = slot * (chats - gap) // size.links
        units[first].append(intro)
        units[rng.randrange(first + gap, chats)].append(detail)
    return units


def _chat_lines(
    rng: random.Random, phrases: Phrases, units: list[list[Line]], turns: int
) -> list[Line]:
    """A chat: small talk to open, then its units shuffled among more, ``turns`` or more."""
    fillers = max(1, (turns - sum(len(unit) for unit in units)) // 2)
    blocks = units + [phrases.small_talk() for _ in range(fillers - 1)]
    rng.shuffle(blocks)
    return phrases.small_talk() + [line for block in blocks for line in block]


def _title(rng: random.Random, language: Language, units: list[list[Line]]) -> str:
    for unit in units:
        for line in unit:
            if line.key.startswith("fact:"):
                return FACTS[language][int(line.key.split(":")[1])].topic
    return rng.choice(VOICES[language].titles)


def _questions(
    language: Language, size: Size, where: dict[str, int], turns: list[Turn]
) -> list[Question]:
    voice, facts = VOICES[language], FACTS[language]
    questions: list[Question] = []
    for number in range(size.facts):
        fact, evidence = facts[number], (where[f"fact:{number}"],)
        if not shares_no_word(render(fact.other, voice, named=False), fact.said):
            raise ValueError(f"the paraphrase {fact.other!r} shares a word with {fact.said!r}")
        questions += [
            Question("single-hop", render(fact.ask, voice, named=False), evidence),
            Question("paraphrase", render(fact.other, voice, named=False), evidence),
            Question("third-person", render(fact.ask, voice, named=True), evidence),
            Question("temporal", render(fact.when, voice, named=False), evidence),
        ]
    for number in range(size.links):
        both = (where[f"intro:{number}"], where[f"detail:{number}"])
        questions.append(Question("multi-hop", _link_question(voice, number), both))
    return questions + _week_after(language, size, where, turns)


def _week_after(
    language: Language, size: Size, where: dict[str, int], turns: list[Turn]
) -> list[Question]:
    """ "What did I do the week after <event>?": the events of the days after it."""
    facts, voice = FACTS[language], VOICES[language]
    events = [n for n in range(size.facts) if facts[n].event]
    questions = []
    for number in events:
        day = turns[where[f"fact:{number}"]].at
        later = tuple(
            sorted(
                where[f"fact:{other}"]
                for other in events
                if WEEK_AFTER[0] <= turns[where[f"fact:{other}"]].at - day <= WEEK_AFTER[1]
            )
        )
        if later:
            text = voice.week_after.format(event=facts[number].event)
            questions.append(Question("temporal", text, later))
    return questions


def generate(language: Language, *, size: str = "full", seed: int = 0) -> History:
    """One person's history in ``language`` (see the module docstring), from ``seed``."""
    shape, voice = SIZES[size], VOICES[language]
    rng = random.Random(f"{language}:{size}:{seed}")
    chats: list[Chat] = []
    turns: list[Turn] = []
    where: dict[str, int] = {}
    phrases = Phrases(rng, voice)
    for number, units in enumerate(_units(rng, phrases, language, shape)):
        day = FIRST_DAY + SPAN * number / shape.chats
        at = day.replace(hour=rng.randrange(8, 21), minute=rng.randrange(60))
        chats.append(Chat(_title(rng, language, units), at))
        for line in _chat_lines(rng, phrases, units, shape.turns_per_chat):
            at += timedelta(minutes=rng.randrange(1, 5))
            if line.key:
                where[line.key] = len(turns)
            turns.append(Turn(line.speaker, line.text, at, number))
    questions = _questions(language, shape, where, turns)
    return History(language, voice.name, tuple(chats), tuple(turns), tuple(questions), NOW)
