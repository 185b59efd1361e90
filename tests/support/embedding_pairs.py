"""Bilingual paraphrase pairs for the embedder: a question and the remark that answers it,
sharing no content word ("what is my cat scared of" / "Mochi hides whenever I vacuum").

Used by the embedder's integration test (each answer must rank above the distractors) and
by bench/embed_speed.py (top-1 and MRR per language). English and Indonesian say the same
things, so the two languages' scores compare.
"""

from __future__ import annotations

PAIRS: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("what is my cat scared of", "Mochi hides under the bed whenever I vacuum"),
        ("where did I go on holiday last summer", "We spent two weeks hiking around Lombok"),
        ("what does my sister do for a living", "Rina teaches chemistry at a high school"),
        ("which food am I allergic to", "Peanuts make my throat swell up"),
        ("how do I get to the office", "I take the train and then walk ten minutes"),
        ("what instrument am I learning", "Guitar practice every evening, my fingers hurt"),
        ("when is my mother's birthday", "Mom turns sixty on the third of March"),
        ("what car do I drive", "My old Toyota needs new brakes again"),
        ("why couldn't I sleep", "The neighbours had a loud party until dawn"),
        ("what did the doctor say about my back", "She told me to stretch daily and avoid lifting"),
        ("which book am I reading", "Halfway through a novel by Murakami"),
        ("what is my son's favourite sport", "Budi plays football every Saturday morning"),
        ("how much rent do I pay", "Three million rupiah each month for the flat"),
        ("what did I cook for dinner yesterday", "Made fried rice with leftover chicken"),
        ("where does my best friend live", "Andi moved to Surabaya two years ago"),
        ("what language course did I sign up for", "Started Japanese lessons on Tuesdays"),
    ],
    "id": [
        (
            "kucing saya takut pada apa",
            "Mochi bersembunyi di kolong ranjang setiap kali aku menyedot debu",
        ),
        ("ke mana saya berlibur musim panas lalu", "Kami dua minggu mendaki gunung di Lombok"),
        ("apa pekerjaan adik perempuan saya", "Rina mengajar kimia di SMA"),
        ("saya alergi makanan apa", "Kacang tanah membuat tenggorokanku bengkak"),
        ("bagaimana saya pergi ke kantor", "Aku naik kereta lalu jalan kaki sepuluh menit"),
        ("alat musik apa yang sedang saya pelajari", "Latihan gitar tiap malam, jariku sakit"),
        ("kapan ulang tahun ibu saya", "Mama genap enam puluh tahun tanggal tiga Maret"),
        ("mobil apa yang saya kendarai", "Toyota tuaku perlu rem baru lagi"),
        ("kenapa saya tidak bisa tidur", "Tetangga berpesta dengan berisik sampai subuh"),
        (
            "apa kata dokter tentang punggung saya",
            "Beliau menyuruhku peregangan setiap hari dan jangan mengangkat beban",
        ),
        ("buku apa yang sedang saya baca", "Sudah setengah jalan membaca novel karya Murakami"),
        ("olahraga kesukaan anak laki-laki saya", "Budi main sepak bola tiap Sabtu pagi"),
        ("berapa sewa yang saya bayar", "Tiga juta rupiah per bulan untuk apartemen itu"),
        ("apa yang saya masak untuk makan malam kemarin", "Bikin nasi goreng pakai sisa ayam"),
        ("di mana sahabat saya tinggal", "Andi pindah ke Surabaya dua tahun lalu"),
        ("kursus bahasa apa yang saya ikuti", "Mulai les bahasa Jepang setiap Selasa"),
    ],
}

# Remarks that answer none of the questions, in both languages (ranked beside the answers).
DISTRACTORS = [
    "The weather was grey and windy all afternoon",
    "I finally fixed the leaking kitchen tap",
    "Our team shipped the new release on Friday",
    "The bakery on the corner closed for renovation",
    "My phone battery dies before lunch these days",
    "We watched a documentary about whales",
    "Cuacanya mendung dan berangin sepanjang sore",
    "Akhirnya aku memperbaiki keran dapur yang bocor",
    "Tim kami merilis versi baru hari Jumat",
    "Toko roti di pojok tutup untuk renovasi",
    "Baterai ponselku habis sebelum makan siang",
    "Kami menonton film dokumenter tentang paus",
]
